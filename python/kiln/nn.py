"""kn.nn: convolutions, pooling, normalizations and activations (kiln's C++
composites: they trace, compile, differentiate and batch like any operation)."""

from . import _kiln

_nn = _kiln._nn

relu = _kiln.relu
sigmoid = _kiln.sigmoid
softmax = _kiln.softmax
log_softmax = _kiln.log_softmax
logsumexp = _kiln.logsumexp
one_hot = _kiln.one_hot
silu = _nn.silu
swish = _nn.silu
softplus = _nn.softplus
log_sigmoid = _nn.log_sigmoid


def gelu(x, approximate=False):
    return _nn.gelu(x, approximate)


def layer_norm(x, axis=-1, eps=1e-5):
    return _nn.layer_norm(x, axis, eps)


def rms_norm(x, axis=-1, eps=1e-6):
    return _nn.rms_norm(x, axis, eps)


def conv(x, kernel, strides=None, padding="valid", dilation=None, groups=1, channels_last=True):
    """Cross-correlation: x [N, spatial..., C] and kernel [spatial..., C/groups, O]
    (channels_last), or PyTorch's x [N, C, spatial...] and kernel [O, C/groups, spatial...]."""
    return _nn.conv(x, kernel, strides, padding, dilation, groups, channels_last)


def conv_transpose(y, kernel, spatial, strides=None, padding="valid", dilation=None, groups=1, channels_last=True):
    return _nn.conv_transpose(y, kernel, spatial, strides, padding, dilation, groups, channels_last)


def reduce_window(x, reduction, window, strides=None, padding="valid"):
    """lax.reduce_window: 'sum', 'max', 'min' or 'mean' over windows of every axis."""
    return _nn.reduce_window(x, reduction, window, strides, padding)


def max_pool(x, window, strides=None, padding="valid", channels_last=True):
    return _nn.max_pool(x, window, strides, padding, channels_last)


def avg_pool(x, window, strides=None, padding="valid", channels_last=True):
    return _nn.avg_pool(x, window, strides, padding, channels_last)
