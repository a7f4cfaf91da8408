-- neuronsim.lua: Wireshark / tshark dissector for the packets of the
-- neuronsim fabric capture (EtherType 0x88B5), as written by the Go package
-- github.com/neuronsim/neuronsim/sim/fabric/capture.
--
-- Use:  tshark -X lua_script:contrib/wireshark/neuronsim.lua -r file.pcap
-- or copy this file to Wireshark's personal Lua plugins folder.
-- See README.md beside this file for the frame format.
--
-- Written for the Wireshark 3.x / 4.x Lua API.

local ETHERTYPE = 0x88B5
local HEADER_SIZE = 40
local MAGIC = 0x4E53
local VERSION = 1

local FLAG_FIRST = 0x01
local FLAG_LAST = 0x02
local FLAG_TRUNCATED = 0x04
local FLAG_TIMING_ONLY = 0x08

-- A read request carries no payload: its length is the bytes asked for.
local OP_READ_REQ = 4

local neuronsim = Proto("neuronsim", "neuronsim fabric packet")

local op_names = {
    [1] = "write",
    [2] = "reduce-write",
    [3] = "semaphore",
    [4] = "read-req",
    [5] = "read-resp",
}

local f = neuronsim.fields
f.magic       = ProtoField.uint16("neuronsim.magic", "Magic", base.HEX)
f.version     = ProtoField.uint8("neuronsim.version", "Version", base.DEC)
f.op          = ProtoField.uint8("neuronsim.op", "Op", base.DEC, op_names)
f.src         = ProtoField.uint16("neuronsim.src", "Source device", base.DEC)
f.dst         = ProtoField.uint16("neuronsim.dst", "Destination device", base.DEC)
f.src_port    = ProtoField.uint8("neuronsim.src_port", "Source port (sender's output)", base.DEC)
f.dst_port    = ProtoField.uint8("neuronsim.dst_port", "Destination port (receiver's input)", base.DEC)
f.hop         = ProtoField.uint8("neuronsim.hop", "Hop (from 0)", base.DEC)
f.hops        = ProtoField.uint8("neuronsim.hops", "Hops on the path", base.DEC)
f.engine      = ProtoField.uint16("neuronsim.engine", "DMA engine", base.DEC)
f.queue       = ProtoField.uint8("neuronsim.queue", "Queue", base.DEC)
f.flags       = ProtoField.uint8("neuronsim.flags", "Flags", base.HEX)
f.first       = ProtoField.bool("neuronsim.flags.first", "First chunk", 8, nil, FLAG_FIRST)
f.last        = ProtoField.bool("neuronsim.flags.last", "Last chunk", 8, nil, FLAG_LAST)
f.truncated   = ProtoField.bool("neuronsim.flags.truncated", "Payload truncated in the capture", 8, nil, FLAG_TRUNCATED)
f.timing_only = ProtoField.bool("neuronsim.flags.timing_only", "Timing only (no payload)", 8, nil, FLAG_TIMING_ONLY)
f.reserved    = ProtoField.uint8("neuronsim.flags.reserved", "Reserved", base.HEX, nil, 0xF0)
f.seq         = ProtoField.uint32("neuronsim.seq", "Sequence", base.DEC)
f.length      = ProtoField.uint32("neuronsim.length", "Chunk length", base.DEC)
f.addr        = ProtoField.uint64("neuronsim.addr", "Destination address", base.HEX)
f.transfer    = ProtoField.uint64("neuronsim.transfer", "Transfer id", base.DEC)
f.carried     = ProtoField.uint32("neuronsim.carried", "Payload bytes carried", base.DEC)

local ef_malformed = ProtoExpert.new("neuronsim.malformed", "Malformed neuronsim packet",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_truncated = ProtoExpert.new("neuronsim.truncated", "Payload truncated in the capture",
    expert.group.SEQUENCE, expert.severity.NOTE)
neuronsim.experts = { ef_malformed, ef_truncated }

local data_dissector = Dissector.get("data")

-- has_flag says whether bit (a power of two) is set in flags; arithmetic, so
-- that it needs no bit library whatever Lua version Wireshark embeds.
local function has_flag(flags, bit)
    return math.floor(flags / bit) % 2 == 1
end

-- hex64 formats a UInt64 as 0x... without leading zeros.
local function hex64(v)
    local s = v:tohex():gsub("^0+", "")
    if s == "" then s = "0" end
    return "0x" .. s
end

function neuronsim.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    pinfo.cols.protocol:set("neuronsim")
    local t = tree:add(neuronsim, tvb(), "neuronsim fabric packet")

    if n < HEADER_SIZE then
        t:add_proto_expert_info(ef_malformed,
            string.format("short header: %d bytes, need %d", n, HEADER_SIZE))
        pinfo.cols.info:set(string.format("malformed: short header (%d of %d bytes)", n, HEADER_SIZE))
        return n
    end

    local magic = tvb(0, 2):uint()
    local version = tvb(2, 1):uint()
    local op = tvb(3, 1):uint()
    t:add(f.magic, tvb(0, 2))
    t:add(f.version, tvb(2, 1))
    t:add(f.op, tvb(3, 1))
    if magic ~= MAGIC then
        t:add_proto_expert_info(ef_malformed, string.format("bad magic 0x%04x, want 0x%04x", magic, MAGIC))
        pinfo.cols.info:set(string.format("malformed: bad magic 0x%04x", magic))
        return n
    end
    if version ~= VERSION then
        t:add_proto_expert_info(ef_malformed, string.format("unknown version %d, want %d", version, VERSION))
        pinfo.cols.info:set(string.format("malformed: unknown version %d", version))
        return n
    end

    local src = tvb(4, 2):uint()
    local dst = tvb(6, 2):uint()
    local hop = tvb(10, 1):uint()
    local hops = tvb(11, 1):uint()
    local flags = tvb(15, 1):uint()
    local seq = tvb(16, 4):uint()
    local length = tvb(20, 4):uint()
    local addr = tvb(24, 8):uint64()

    t:add(f.src, tvb(4, 2))
    t:add(f.dst, tvb(6, 2))
    t:add(f.src_port, tvb(8, 1))
    t:add(f.dst_port, tvb(9, 1))
    t:add(f.hop, tvb(10, 1))
    t:add(f.hops, tvb(11, 1))
    t:add(f.engine, tvb(12, 2))
    t:add(f.queue, tvb(14, 1))
    local ft = t:add(f.flags, tvb(15, 1))
    ft:add(f.first, tvb(15, 1))
    ft:add(f.last, tvb(15, 1))
    ft:add(f.truncated, tvb(15, 1))
    ft:add(f.timing_only, tvb(15, 1))
    ft:add(f.reserved, tvb(15, 1))
    t:add(f.seq, tvb(16, 4))
    t:add(f.length, tvb(20, 4))
    t:add(f.addr, tvb(24, 8))
    t:add(f.transfer, tvb(32, 8))

    local carried = n - HEADER_SIZE
    local ci = t:add(f.carried, carried)
    ci:set_generated()

    local opname = op_names[op]
    local problem = nil
    if opname == nil then
        problem = string.format("unknown op %d", op)
        opname = string.format("op(%d)", op)
    elseif carried > length then
        problem = string.format("%d payload bytes exceed the chunk length %d", carried, length)
    elseif has_flag(flags, FLAG_TIMING_ONLY) and carried > 0 then
        problem = string.format("timing-only packet carries %d payload bytes", carried)
    elseif op == OP_READ_REQ and carried > 0 then
        problem = string.format("read request carries %d payload bytes", carried)
    end

    -- \226\134\146 is U+2192 (a right arrow) in UTF-8.
    local info = string.format("%s dev %d \226\134\146 %d hop %d/%d seq %d len %d @%s",
        opname, src, dst, hop + 1, hops, seq, length, hex64(addr))
    local truncated = has_flag(flags, FLAG_TRUNCATED)
    if has_flag(flags, FLAG_TIMING_ONLY) then
        info = info .. " [timing only]"
    elseif truncated then
        info = info .. string.format(" [%d of %d bytes captured]", carried, length)
    end
    if problem ~= nil then
        t:add_proto_expert_info(ef_malformed, problem)
        info = "malformed: " .. problem .. "; " .. info
    elseif truncated then
        t:add_proto_expert_info(ef_truncated,
            string.format("payload truncated: %d of %d bytes captured", carried, length))
    end
    pinfo.cols.info:set(info)

    if carried > 0 then
        local ptvb = tvb(HEADER_SIZE, carried):tvb()
        data_dissector:call(ptvb, pinfo, tree)
    end
    return n
end

DissectorTable.get("ethertype"):add(ETHERTYPE, neuronsim)
