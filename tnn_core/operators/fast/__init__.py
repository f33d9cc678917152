"""The operators' fast paths, each with a dense reference in the tests.

    fft_product   the FFT Toeplitz product with a hand-written adjoint, chunked over the batch
    band          SKI's band as a channels-last convolution; the tap gradient by blocked GEMM
    interp        SKI's W and Wᵀ along the rows (linear upsampling and its adjoint)
    ski_fused     SKI's bidirectional band + W A Wᵀ as one autograd node
"""
