"""The names of the attributes one level of strata writes for another to read.

Each is written by one layer and read by others (a pass and the runtime, the importer
and a pass); the name lives here, with the dialects, so that no layer imports another
for a string.
"""

from __future__ import annotations

# On a kernel.launch: each output's strides, where a kernel writes it in a layout other
# than row-major (passes/fusion/layouts.py); on a graph argument: its strides.
STRIDES_ATTR = "strata.strides"
# On a library op (a convolution): the memory format its result must have.
LAYOUT_ATTR = "strata.layout"
CHANNELS_LAST = "channels_last"
# On a kernel.program: for each result, the strides eager gives it where they are a
# dense layout other than row-major, else [] (the runtime copies a result that comes
# out otherwise into them: runtime/compiled_graph.py).
RESULT_STRIDES_ATTR = "strata.result_strides"
# On a graph argument: the storage offset torch traced it at, where an as_strided reads
# its storage (frontend/capture/storage_offsets.py, passes/decompositions/copies.py).
STORAGE_OFFSET = "strata.storage_offset"
