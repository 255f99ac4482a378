"""Weight file readers: safetensors and GGUF, each a lazy name -> numpy array mapping over a
memory-mapped file. Feed one to ``module.load_state_dict(rt, weights)``."""

from .gguf import GGUFFile, load_gguf
from .safetensors import SafeTensorsDir, SafeTensorsFile, load_safetensors

__all__ = ["GGUFFile", "SafeTensorsDir", "SafeTensorsFile", "load_gguf", "load_safetensors"]
