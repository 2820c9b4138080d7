// ElementWiseAdd1 of two FLOAT32 tensors: output = a + b, one element per invocation.
// The bindings are what `gpudml shader add --shape N --interface hlsl` prints.
StructuredBuffer<float> a_tensor        : register(t0);
StructuredBuffer<float> b_tensor        : register(t1);
RWStructuredBuffer<float> output_tensor : register(u0);
cbuffer Constants : register(b0) {
    uint count;  // elements
};

[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    uint i = id.x;
    if (i < count)
        output_tensor[i] = a_tensor[i] + b_tensor[i];
}
