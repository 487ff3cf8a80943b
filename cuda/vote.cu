// Placeholder: being written.
extern "C" __global__ void vote() {}
