; A cayman-and-later opcode: the validators accept it on cayman and mariana and refuse it
; on sunda. The model validates it only (docs/isa.md: executed "no"): run, its engine
; stops with ERROR 3.
.engine sp
dma_transpose dst=sbuf[0:1,0]:bf16[4] src0=sbuf[0:1,0x100]:bf16[4] aux=3 last
