// Placeholder; the Engram helper replaces this file.
