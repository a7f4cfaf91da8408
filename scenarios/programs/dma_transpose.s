; A cayman-and-later opcode: valid on cayman and mariana, invalid on sunda.
.engine sp
dma_transpose dst=sbuf[0:1,0]:bf16[4] src0=sbuf[0:1,0x100]:bf16[4] aux=3 last
