; C = relu(0.5 · (Wᵀ · X) + 0.25): W [128 × 128] and X [128 × 512] in bf16
.engine pe
load_stationary src0=sbuf[0:128,0]:bf16[128]
multiply_moving dst=psum[0:128,0]:fp32[512] src0=sbuf[0:128,0x100]:bf16[512] signal=sem_incr(1,1) last
.engine act
activation op=relu dst=sbuf[0:128,0x900]:fp32[512] src0=psum[0:128,0]:fp32[512] imm0=f32(0.5) imm1=f32(0.25) wait=sem_ge(1,1) last
