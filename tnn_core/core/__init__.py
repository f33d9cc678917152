"""The functional core: pure torch functions, no modules and no configs.

    toeplitz        lag layout, the dense reference, the FFT product (circulant embedding)
    spectrum        the discrete Hilbert transform: causal and bidirectional spectra (FD)
    interpolation   SKI's sparse W: inducing points, gather and scatter-add
    rpe             the RPE MLP (official TNN layout) and SKI's piecewise-linear RPE

Imports torch only.
"""
