// Placeholder; the numerics helper replaces this file.
