// Placeholder; replaced by the Safetensors implementation.
