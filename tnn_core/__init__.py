"""tnn_core: Toeplitz neural network operators, analysis and training for Toeplitz Lab.

Layout (imports flow downwards):
    toeplitz, spectrum, interpolation, rpe   functional core (torch only)
    operators/                               TNO, SKI, FD token mixers
    models                                   GTU, GLU, TNN layers, LM and classifier
    kernels                                  kernel presets for the app and analysis
"""

__version__ = "0.1.0"
