"""tnn_core: Toeplitz neural network operators, analysis and training for Toeplitz Lab.

Layout (each part imports only the parts above it; tests/test_layout.py enforces it):
    checks, files, allocator  leaves: validators, bounded reads and exclusive outputs,
                              the CPU allocator setting (no tnn_core imports)
    core/                     functional core (torch only): Toeplitz products, causal
                              spectra, SKI interpolation, the RPE
    operators/                TNO, SKI, FD, Togeipi and SSM token mixers, ``build_operator``
    models                    GTU, GLU, TNN layers; causal LM and classifier, ``build_model``
    analysis/                 SKI decompositions and their errors, spectra, kernel profiles
    training/                 tasks, the training loop and CLI, evaluation, checkpoints
    bench/                    timing and memory of the operators (``python -m tnn_core.bench``)
    compress/                 trained models converted to band + low rank or a recurrence
    convert/                  models trained with the authors' code, read without running
                              code and imported as their kernels (``python -m tnn_core.convert``)
    generate                  a causal LM a token at a time (``python -m tnn_core.generate``)
    report                    a checkpoint's model card and per-layer spectra
    lab/                      what each app page computes, as frozen dataclasses
"""

__version__ = "0.1.0"
