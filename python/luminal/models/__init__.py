"""Model definitions with their loaders: the Llama family (causal LMs with KV-cache generation:
Llama, Mistral, Phi-3, Qwen2/3, Gemma 1/2/3), BERT (sentence embeddings) and Whisper (speech
recognition), each built from a Hugging Face model directory, and YOLOv8 object detection
from ultralytics' checkpoints."""

from .bert import BertConfig, BertModel, SentenceEmbedder, mean_pool_normalize
from .decoder_config import DecoderConfig
from .generation import CausalLMSession, GenerationStats, Sampler, generate
from .llama import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from .pipeline import PipelineSession
from .tensor_parallel import TensorParallelSession
from .whisper import WhisperConfig, WhisperForConditionalGeneration, WhisperSession
from .yolo import YOLOConfig, YOLODetector, YOLOv8

__all__ = [
    "AutoModelForCausalLM", "BertConfig", "BertModel", "CausalLMSession", "DecoderConfig",
    "GenerationStats", "LlamaConfig", "LlamaForCausalLM", "PipelineSession", "Sampler",
    "SentenceEmbedder", "TensorParallelSession", "generate", "mean_pool_normalize",
    "WhisperConfig", "WhisperForConditionalGeneration", "WhisperSession",
    "YOLOConfig", "YOLODetector", "YOLOv8",
]
