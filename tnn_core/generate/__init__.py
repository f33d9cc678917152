"""Generation with a causal language model, a token at a time.

``incremental``: one causal token mixer applied a token at a time, in its Toeplitz form
(its inputs so far) or its recurrent form (an SSM's modes). ``decoder``: a whole causal
LM run that way, equal to its full forward at every position. ``writer``: sampling and
text. ``cli``: ``python -m tnn_core.generate``.
"""

from tnn_core.generate.decoder import Decoder
from tnn_core.generate.incremental import ModalState, ToeplitzHistory, incremental_form
from tnn_core.generate.writer import Sampling, next_token, vocab_of, write, writing

__all__ = ["Decoder", "ToeplitzHistory", "ModalState", "incremental_form", "Sampling",
           "next_token", "vocab_of", "write", "writing"]
