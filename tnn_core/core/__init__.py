"""The functional core: pure torch functions, no modules and no configs.

    toeplitz        lag layout, the dense reference, the FFT product (circulant embedding)
    spectrum        the discrete Hilbert transform: causal spectra (FD), spectrum -> lags
    interpolation   SKI's sparse W: inducing points, gather and scatter-add (the reference)
    rpe             the RPE MLP (official TNN layout) and SKI's piecewise-linear RPE

Imports torch and the validators of ``tnn_core.checks`` (a dependency-free leaf) only.
"""
