#version 450
// variants: u32
// Placeholder: being written.
layout(local_size_x = 32) in;
void main() {}
