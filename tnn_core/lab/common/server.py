"""The app server's process, set up once when the app starts: glibc keeps freed memory, so a
large tensor does not page-fault its way in on every view (``tnn_core.allocator``).
"""

from tnn_core.allocator import keep_freed_memory

__all__ = ["keep_freed_memory"]
