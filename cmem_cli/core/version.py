"""cmem's version, in the kernel so the index (which may import only the kernel) can name it too."""

VERSION = "0.1.0"
