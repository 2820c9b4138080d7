// Reduce SUM over the last axis of a [rows, n] FLOAT32 tensor, DirectML style: one workgroup
// per row, each lane sums a strided part of the row, then the workgroup combines its lanes'
// sums: with wave intrinsics (USE_WAVE=1, on adapters with subgroups) or a groupshared tree.
// The cbuffer is what `gpudml shader reduce --function sum --axes 1 --shape ROWS,N
// --interface hlsl` prints (the operator's own uniforms): count = rows, red_count = n.
StructuredBuffer<float> input_tensor    : register(t0);
RWStructuredBuffer<float> output_tensor : register(u0);
cbuffer Constants : register(b0) {
    uint4 out_sizes[1];
    uint4 out_strides[1];
    uint4 in_strides[1];
    uint4 red_sizes[1];
    uint4 red_strides[1];
    uint count;      // rows
    uint red_count;  // elements per row
};

#ifndef USE_WAVE
#define USE_WAVE 0
#endif
#define GROUP 64
groupshared float partial[GROUP];

[numthreads(GROUP, 1, 1)]
void main(uint3 group : SV_GroupID, uint lane : SV_GroupIndex) {
    uint row = group.x;  // grid: (rows, 1, 1)
    float s = 0;
    if (row < count)
        for (uint i = lane; i < red_count; i += GROUP)
            s += input_tensor[row * red_count + i];
#if USE_WAVE
    s = WaveActiveSum(s);                    // the wave's sum, in each of its lanes
    uint waves = max(1u, GROUP / WaveGetLaneCount());
    if (WaveGetLaneIndex() == 0)
        partial[lane / WaveGetLaneCount()] = s;
    GroupMemoryBarrierWithGroupSync();
    if (lane == 0 && row < count) {
        float total = 0;
        for (uint w = 0; w < waves; w++)
            total += partial[w];
        output_tensor[row] = total;
    }
#else
    partial[lane] = s;
    GroupMemoryBarrierWithGroupSync();
    for (uint stride = GROUP / 2; stride > 0; stride >>= 1) {  // the tree: halve the lanes each step
        if (lane < stride)
            partial[lane] += partial[lane + stride];
        GroupMemoryBarrierWithGroupSync();
    }
    if (lane == 0 && row < count)
        output_tensor[row] = partial[0];
#endif
}
