"""The functions of a JavaScript source and their lines, for the house rules on the figures'
JavaScript (tests/test_layout.py): a function is at most MAX_FUNCTION_LINES long unless the
line right above its header is a ``// long: <why>`` comment.

Read with a small tokenizer, no JavaScript engine: it skips comments, strings, template
literals (their ``${…}`` expressions are code and are read) and regular-expression literals
(``/[0-9a-f]{2}/`` holds braces), then matches braces. A ``{`` opens a function's body when
it follows

- ``=>``: an arrow function, ``const name = (...) => {`` or a callback ``(value) => {``;
- ``function name(...)`` or ``function (...)``: a declaration or an expression, ``export
  default function (component) {`` too;
- ``name(...)`` where name is no keyword (``if``, ``for``, ``while``, ``switch``,
  ``catch``, ``with``): a method of a class or an object literal.

A function's lines run from its header (the line of ``function``, of a method's name, of an
arrow's parameters) to its closing brace, both counted; a nested function's lines count in
the function around it too, as Python's ``ast`` counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

LONG_MARK = "// long:"  # the comment that lets a function run past the limit, and says why

NOT_CALLEES = {"if", "for", "while", "switch", "catch", "with", "return", "typeof"}
REGEX_AFTER = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
               "case", "do", "else", "yield", "await"}  # keywords a regex literal may follow


@dataclass(frozen=True)
class Token:
    text: str
    line: int  # 1-based
    word: bool  # an identifier, keyword or number


@dataclass(frozen=True)
class Function:
    name: str  # "<arrow>" or "<anonymous>" where the source gives none
    first: int  # the header's line, 1-based
    last: int  # the closing brace's line

    @property
    def lines(self) -> int:
        return self.last - self.first + 1


class _Reader:
    """Tokens of a JavaScript source, literals and comments skipped."""

    def __init__(self, text: str):
        self.text, self.at, self.line = text, 0, 1
        self.tokens: list[Token] = []
        self.braces: list[str] = []  # "{" for a code brace, "`" for a template's ${

    def _advance(self, stop: int) -> None:
        self.line += self.text.count("\n", self.at, stop)
        self.at = stop

    def _quoted(self, quote: str) -> None:
        """Skip a string from its opening quote, past the closing one (escapes honoured)."""
        i = self.at + 1
        while self.text[i] != quote:
            i += 2 if self.text[i] == "\\" else 1
        self._advance(i + 1)

    def _template(self) -> None:
        """Skip template text from just after a backtick (or a ``${…}``'s closing brace) to
        its end, or into its next ``${``, which is code."""
        i = self.at
        while True:
            if self.text[i] == "\\":
                i += 2
            elif self.text[i] == "`":
                self._advance(i + 1)
                return
            elif self.text.startswith("${", i):
                self.braces.append("`")
                self.tokens.append(Token("${", self.line + self.text.count("\n", self.at, i),
                                         False))
                self._advance(i + 2)
                return
            else:
                i += 1

    def _regex_may_start(self) -> bool:
        if not self.tokens:
            return True
        last = self.tokens[-1]
        return last.text in REGEX_AFTER if last.word else last.text not in (")", "]", "}")

    def _regex(self) -> None:
        i, in_class = self.at + 1, False
        while in_class or self.text[i] != "/":
            if self.text[i] == "\\":
                i += 1
            elif self.text[i] in "[]":
                in_class = self.text[i] == "["
            i += 1
        i += 1
        while i < len(self.text) and self.text[i].isalpha():  # flags
            i += 1
        self._advance(i)

    def _word(self) -> None:
        """An identifier, keyword or number; a dotted path (``a.b``, ``1.5``) is one word."""
        i = self.at
        while i < len(self.text) and (self.text[i].isalnum() or self.text[i] in "_$."):
            i += 1
        self.tokens.append(Token(self.text[self.at:i], self.line, True))
        self._advance(i)

    def _punctuator(self) -> None:
        text = "=>" if self.text.startswith("=>", self.at) else self.text[self.at]
        self.tokens.append(Token(text, self.line, False))
        self._advance(self.at + len(text))
        if text == "{":
            self.braces.append("{")
        elif text == "}" and self.braces and self.braces.pop() == "`":
            self._template()  # the end of a template's ${…}: template text again

    def read(self) -> list[Token]:
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char.isspace():
                self._advance(self.at + 1)
            elif text.startswith("//", self.at):
                end = text.find("\n", self.at)
                self._advance(len(text) if end < 0 else end)
            elif text.startswith("/*", self.at):
                self._advance(text.index("*/", self.at) + 2)
            elif char in "'\"":
                self._quoted(char)
            elif char == "`":
                self._advance(self.at + 1)
                self._template()
            elif char == "/" and self._regex_may_start():
                self._regex()
            elif char.isalnum() or char in "_$":
                self._word()
            else:
                self._punctuator()
        return self.tokens


def _opening_paren(tokens: list[Token], close: int) -> int:
    """The index of the ``(`` that the ``)`` at ``close`` closes."""
    depth = 0
    for i in range(close, -1, -1):
        depth += {")": 1, "(": -1}.get(tokens[i].text, 0)
        if depth == 0:
            return i
    raise ValueError(f"line {tokens[close].line}: ')' without its '('")


def _arrow_header(tokens: list[Token], arrow: int) -> tuple[str, int]:
    """The name and first token of the arrow function whose ``=>`` is at ``arrow``."""
    before = arrow - 1
    start = _opening_paren(tokens, before) if tokens[before].text == ")" else before
    if start >= 2 and tokens[start - 1].text == "async":
        start -= 1
    named = start >= 2 and tokens[start - 1].text in ("=", ":") and tokens[start - 2].word
    return (tokens[start - 2].text if named else "<arrow>"), start


def _header(tokens: list[Token], brace: int) -> tuple[str, int] | None:
    """(name, index of the first token of the header) if the ``{`` at ``brace`` opens a
    function's body, else None."""
    if brace == 0:
        return None
    if tokens[brace - 1].text == "=>":
        return _arrow_header(tokens, brace - 1)
    if tokens[brace - 1].text != ")":
        return None
    paren = _opening_paren(tokens, brace - 1)
    callee = tokens[paren - 1] if paren >= 1 else None
    if callee is None or not callee.word or callee.text in NOT_CALLEES:
        return None
    if callee.text == "function":
        return "<anonymous>", paren - 1
    if paren >= 2 and tokens[paren - 2].text == "function":
        return callee.text, paren - 2
    if paren >= 3 and tokens[paren - 2].text == "*" and tokens[paren - 3].text == "function":
        return callee.text, paren - 3
    return callee.text, paren - 1  # a method


def functions(text: str) -> list[Function]:
    """Every function of the JavaScript ``text`` with a braced body, in source order."""
    tokens = _Reader(text).read()
    found, open_bodies = [], []  # open_bodies: (name, first line) or None per open brace
    for i, token in enumerate(tokens):
        if token.word:
            continue
        if token.text in ("{", "${"):
            header = _header(tokens, i) if token.text == "{" else None
            open_bodies.append(header and (header[0], tokens[header[1]].line))
        elif token.text == "}":
            body = open_bodies.pop()
            if body is not None:
                found.append(Function(body[0], body[1], token.line))
    return sorted(found, key=lambda f: (f.first, f.last))


def long_functions(text: str, limit: int) -> list[Function]:
    """The functions of ``text`` over ``limit`` lines whose header has no ``// long:``
    comment on the line right above it."""
    lines = text.splitlines()
    return [f for f in functions(text) if f.lines > limit
            and not (f.first >= 2 and lines[f.first - 2].strip().startswith(LONG_MARK))]
