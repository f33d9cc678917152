"""The inert unpickler: a foreign pickle read as data, nothing imported, nothing called.

A ``torch.save`` file is a pickle, and Python's own loader runs whatever a pickle names
(``os.system``, ``eval``, ``subprocess.Popen``...). This one never does (issue 36):

- ``find_class`` imports nothing: it returns a ``Global`` naming (module, name);
- REDUCE, NEWOBJ, NEWOBJ_EX, OBJ and INST on a ``Global`` build a ``Call`` that holds the
  arguments as data; BUILD stores the state in the ``Call``; APPEND(S) and SETITEM(S) on
  a ``Call`` record the items in it. On anything else these opcodes are refused, so no
  method of a real object is ever called;
- ``persistent_load`` returns a ``StorageRef`` (key, storage type, numel) and reads no
  storage: ``reader`` reads only the storages of the model's tensors, later;
- dict keys and set members must be flat (a str, a number, bytes, None, a record, or a
  tuple of those), because hashing a deeply nested tuple recurses in C.

It is Python's pure-Python unpickler (``pickle._Unpickler``, the reference
implementation of the same opcodes) with its opcode table replaced, since only a Python
loop can count what it builds: a file's pickles hold at most ``MAX_PICKLE_BYTES``
together and run at most ``MAX_OBJECTS`` opcodes (each builds at most one object), so a
stream of 10^7 empty lists stops after 10^6. ``plain`` turns records into plain data
(dicts, lists, strings, numbers) nested at most ``MAX_DEPTH`` deep.

Every refusal is a ``CheckpointError`` of one sentence naming the source and the limit.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

from tnn_core.training.checkpoint_header import CheckpointError

__all__ = ["MAX_DEPTH", "MAX_NAME", "MAX_OBJECTS", "MAX_PICKLE_BYTES", "Budget", "Call",
           "Global", "StorageRef", "as_mapping", "describe", "load_inert", "plain"]

MAX_PICKLE_BYTES = 64 * 2**20  # all the pickles of one file together
MAX_OBJECTS = 1_000_000  # opcodes run over a file's pickles; each builds at most one object
MAX_DEPTH = 200  # nesting of the data ``plain`` returns (fairseq's cfg nests about 4 deep)
MAX_NAME = 300  # characters of a global's module or name, a storage key, a tensor name
CYCLE = "(a reference back to an enclosing object)"  # what ``plain`` puts for a cycle
_MAPPINGS = {"collections.OrderedDict", "builtins.dict", "collections.defaultdict"}
_NAMESPACES = {"argparse.Namespace"}  # objects whose settings are their attributes


@dataclass(frozen=True)
class Global:
    """What a pickle's GLOBAL names (module, name), never imported."""

    module: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False)
class Call:
    """A call a pickle asked for, never made: the callee, its arguments, then what BUILD,
    APPEND(S) and SETITEM(S) added to its result."""

    callee: Global
    args: tuple
    kwargs: dict = field(default_factory=dict)
    state: object = None
    items: dict = field(default_factory=dict)
    values: list = field(default_factory=list)


@dataclass(frozen=True)
class StorageRef:
    """A tensor storage a pickle refers to: its key, its type (``torch.FloatStorage``...)
    and its number of elements. Its bytes are elsewhere in the file, unread."""

    key: str
    storage_type: Global
    numel: int


class Budget:
    """What the pickles of one file may still use: bytes of stream and opcodes. Each
    opcode charges one (``_counted``), inline: it is the unpickler's innermost loop."""

    def __init__(self, source: str):
        self.source = source
        self.bytes_left = MAX_PICKLE_BYTES
        self.objects_left = MAX_OBJECTS
        self.storages: dict[str, StorageRef] = {}

    def too_many_bytes(self):
        raise CheckpointError(f"{self.source}: its pickles need more than MAX_PICKLE_BYTES = "
                              f"{MAX_PICKLE_BYTES:,} bytes, the limit")

    def too_many_objects(self):
        raise CheckpointError(f"{self.source}: its pickles build more than MAX_OBJECTS = "
                              f"{MAX_OBJECTS:,} objects, the limit")


class _BoundedStream:
    """A binary stream whose reads are charged to a Budget before they happen."""

    def __init__(self, stream, budget: Budget):
        self.read_stream, self.readline_stream = stream.read, stream.readline
        self.budget = budget

    def read(self, count: int) -> bytes:
        budget = self.budget
        budget.bytes_left -= count
        if budget.bytes_left < 0:
            budget.too_many_bytes()
        return self.read_stream(count)

    def readline(self) -> bytes:
        line = self.readline_stream(self.budget.bytes_left + 1)
        self.budget.bytes_left -= len(line)
        if self.budget.bytes_left < 0:
            self.budget.too_many_bytes()
        return line


_ATOMS = (str, bytes, int, float, type(None), Global, Call, StorageRef)


def _flat(key) -> bool:
    return isinstance(key, _ATOMS) or (isinstance(key, tuple)
                                       and all(isinstance(k, _ATOMS) for k in key))


def describe(value) -> str:
    """What ``value`` is, in words, for a message ("a call of posix.system", "a list")."""
    if isinstance(value, Call):
        return f"a call of {value.callee.qualified}"
    if isinstance(value, Global):
        return f"a reference to {value.qualified}"
    if isinstance(value, StorageRef):
        return "a bare storage"
    return "None" if value is None else f"a value of type {type(value).__name__}"


class InertUnpickler(pickle._Unpickler):
    """One pickle of a file, read as records; its opcodes are charged to ``budget``."""

    def __init__(self, stream, budget: Budget):
        super().__init__(_BoundedStream(stream, budget), encoding="utf-8")
        self.budget = budget

    def refuse(self, what: str):
        raise CheckpointError(f"{self.budget.source}: {what}")

    def find_class(self, module, name) -> Global:
        if not (isinstance(module, str) and isinstance(name, str)
                and len(module) <= MAX_NAME and len(name) <= MAX_NAME):
            self.refuse(f"a global's module or name is not a string of at most {MAX_NAME} "
                        f"characters")
        return Global(module, name)

    def persistent_load(self, pid) -> StorageRef:
        """torch's storage id: ("storage", type, key, location, numel[, view])."""
        if isinstance(pid, tuple) and pid[:1] == (b"storage",):
            pid = ("storage", *pid[1:])
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"
                and isinstance(pid[1], Global) and isinstance(pid[2], str)
                and len(pid[2]) <= MAX_NAME and isinstance(pid[4], int)
                and not isinstance(pid[4], bool) and pid[4] >= 0):
            self.refuse(f"a persistent id is not torch's (\"storage\", type, key, location, "
                        f"numel) with a key of at most {MAX_NAME} characters")
        if len(pid) == 6 and pid[5] is not None:
            self.refuse(f"storage {pid[2]} is a view of another (a format of torch before "
                        f"1.0), which the reader does not support")
        ref = StorageRef(pid[2], pid[1], pid[4])
        known = self.budget.storages.setdefault(ref.key, ref)
        if known != ref:
            self.refuse(f"storage {ref.key} is named twice with different types or sizes")
        return known

    def call(self, callee, args, kwargs) -> Call:
        if not isinstance(callee, Global):
            self.refuse(f"a pickle calls what {describe(callee)} would return; only globals "
                        f"are called, and then only recorded")
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            self.refuse(f"the arguments of {callee.qualified} are not a tuple and a dict")
        if callee.qualified == "copyreg._reconstructor" and args and \
                isinstance(args[0], Global):  # protocol 0 and 1's way to write an object
            return Call(args[0], ())
        return Call(callee, args, kwargs)

    def add_values(self, target, values: list) -> None:
        if isinstance(target, list):
            target.extend(values)
        elif isinstance(target, Call):
            target.values.extend(values)
        else:
            self.refuse(f"a pickle appends to {describe(target)}")

    def set_items(self, target, items: list) -> None:
        if not isinstance(target, (dict, Call)):
            self.refuse(f"a pickle sets items of {describe(target)}")
        mapping = target if isinstance(target, dict) else target.items
        for key, value in zip(items[::2], items[1::2], strict=True):
            if not _flat(key):
                self.refuse(f"a dict key is {describe(key)}, not a string, a number or a flat "
                            f"tuple")
            mapping[key] = value

    def members(self, items: list) -> list:
        if not all(map(_flat, items)):
            self.refuse("a set member is not a string, a number or a flat tuple")
        return items

    def build(self) -> None:
        state, target = self.stack.pop(), self.stack[-1]
        if not isinstance(target, Call) or target.state is not None:
            self.refuse(f"a pickle sets the state of {describe(target)}")
        target.state = state


def _reduce(self):  # REDUCE and NEWOBJ: (a callable or a class, its arguments)
    args = self.stack.pop()
    self.stack[-1] = self.call(self.stack[-1], args, {})


def _newobj_ex(self):
    kwargs, args = self.stack.pop(), self.stack.pop()
    self.stack[-1] = self.call(self.stack[-1], args, kwargs)


def _obj(self):
    args = self.pop_mark()
    if not args:
        self.refuse("an OBJ opcode has no class")
    self.append(self.call(args[0], tuple(args[1:]), {}))


def _inst(self):
    module = self.readline()[:-1].decode("ascii")
    name = self.readline()[:-1].decode("ascii")
    self.append(self.call(self.find_class(module, name), tuple(self.pop_mark()), {}))


def _append(self):
    value = self.stack.pop()
    self.add_values(self.stack[-1], [value])


def _appends(self):
    values = self.pop_mark()
    self.add_values(self.stack[-1], values)


def _setitem(self):
    value, key = self.stack.pop(), self.stack.pop()
    self.set_items(self.stack[-1], [key, value])


def _setitems(self):
    items = self.pop_mark()
    self.set_items(self.stack[-1], items)


def _dict(self):
    items, mapping = self.pop_mark(), {}
    self.set_items(mapping, items)
    self.append(mapping)


def _additems(self):
    items, target = self.pop_mark(), self.stack[-1]
    if not isinstance(target, set):
        self.refuse(f"a pickle adds set members to {describe(target)}")
    target.update(self.members(items))


def _frozenset(self):
    self.append(frozenset(self.members(self.pop_mark())))


def _counted(step):
    def counted(self):
        budget = self.budget
        budget.objects_left -= 1
        if budget.objects_left < 0:
            budget.too_many_objects()
        step(self)
    return counted


_OVERRIDES = {pickle.REDUCE: _reduce, pickle.NEWOBJ: _reduce, pickle.NEWOBJ_EX: _newobj_ex,
              pickle.OBJ: _obj, pickle.INST: _inst, pickle.BUILD: InertUnpickler.build,
              pickle.APPEND: _append, pickle.APPENDS: _appends, pickle.SETITEM: _setitem,
              pickle.SETITEMS: _setitems, pickle.DICT: _dict, pickle.ADDITEMS: _additems,
              pickle.FROZENSET: _frozenset}
InertUnpickler.dispatch = {
    code: _counted(step) for code, step in
    {**pickle._Unpickler.dispatch, **{op[0]: step for op, step in _OVERRIDES.items()}}.items()}


def load_inert(stream, budget: Budget):
    """The next pickle of ``stream`` as records, its reads and opcodes charged to
    ``budget`` (the storages it names are collected in ``budget.storages``)."""
    return InertUnpickler(stream, budget).load()


def as_mapping(value) -> dict | None:
    """The items of a dict or of a recorded OrderedDict (a state dict); None otherwise."""
    if isinstance(value, dict):
        return value
    if isinstance(value, Call) and value.callee.qualified in _MAPPINGS:
        return value.items
    return None


def plain(value, source: str, what: str):
    """``value`` as plain data: dicts, lists, tuples, strings, bytes, numbers, None.

    An argparse Namespace or any object rebuilt from its state becomes its attributes
    (omegaconf's DictConfig and ListConfig their ``_content``, a value node its
    ``_val``); a dict-like its items; any other call a record of it,
    {"__call__": "posix.system", "args": [...]}, never its result; a global
    {"__global__": name}; a storage {"__storage__": key, ...}. Shared parts are
    converted once; a cycle becomes the string CYCLE. ``what`` names the value in the
    refusal of a nesting deeper than MAX_DEPTH."""
    return _Plain(source, what).convert(value, 0)


class _Plain:
    def __init__(self, source: str, what: str):
        self.source, self.what = source, what
        self.done: dict[int, tuple] = {}  # id -> (the value, kept alive so its id stays
        # unique, and its plain form)
        self.open: set[int] = set()

    def convert(self, value, depth: int):
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return value
        if depth >= MAX_DEPTH:
            raise CheckpointError(f"{self.source}: its {self.what} nest deeper than "
                                  f"MAX_DEPTH = {MAX_DEPTH} levels, the limit")
        key = id(value)
        if key in self.open:
            return CYCLE
        if key not in self.done:
            self.open.add(key)
            self.done[key] = (value, self._converted(value, depth + 1))
            self.open.discard(key)
        return self.done[key][1]

    def _key(self, key):
        if isinstance(key, tuple):
            return tuple(self._key(k) for k in key)
        if isinstance(key, (Global, Call, StorageRef)):
            return f"({describe(key)})"
        return key

    def _converted(self, value, depth: int):
        if isinstance(value, (list, tuple)):
            return type(value)(self.convert(v, depth) for v in value)
        if isinstance(value, (set, frozenset)):
            return [self.convert(v, depth) for v in value]
        if isinstance(value, bytearray):
            return bytes(value)
        if isinstance(value, dict):
            return {self._key(k): self.convert(v, depth) for k, v in value.items()}
        if isinstance(value, Global):
            return {"__global__": value.qualified}
        if isinstance(value, StorageRef):
            return {"__storage__": value.key, "type": value.storage_type.qualified,
                    "numel": value.numel}
        if not isinstance(value, Call):
            return f"({describe(value)})"
        return self._object(value, depth)

    def _object(self, call: Call, depth: int):
        name = call.callee.qualified
        if name in _MAPPINGS:
            return self.convert(call.items, depth)
        state = call.state
        if isinstance(state, tuple) and len(state) == 2 and all(
                isinstance(s, dict | None) for s in state):  # (__dict__, __slots__ values)
            state = {**(state[0] or {}), **(state[1] or {})}
        if name in _NAMESPACES or (not call.args and isinstance(state, dict)):
            state = state if isinstance(state, dict) else {}
            if "_content" in state:  # omegaconf containers
                return self.convert(state["_content"], depth)
            if "_val" in state:  # omegaconf value nodes
                return self.convert(state["_val"], depth)
            return self.convert(state, depth)
        record = {"__call__": name, "args": self.convert(list(call.args), depth)}
        if call.state is not None:
            record["state"] = self.convert(call.state, depth)
        extras = {"kwargs": call.kwargs, "items": call.items, "values": call.values}
        record |= {k: self.convert(v, depth) for k, v in extras.items() if v}
        return record
