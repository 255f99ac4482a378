"""Model definitions with their loaders: Llama (causal LM with KV-cache generation) and BERT
(sentence embeddings), each built from a Hugging Face model directory."""

from .bert import BertConfig, BertModel, SentenceEmbedder, mean_pool_normalize
from .generation import CausalLMSession, GenerationStats, Sampler, generate
from .llama import LlamaConfig, LlamaForCausalLM

__all__ = [
    "BertConfig", "BertModel", "CausalLMSession", "GenerationStats", "LlamaConfig",
    "LlamaForCausalLM", "Sampler", "SentenceEmbedder", "generate", "mean_pool_normalize",
]
