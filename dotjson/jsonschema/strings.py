"""Strings: patterns, formats, lengths and string ``enum`` values as encoded content languages.

A string's constraints are languages of *decoded* text (a regex, a format, a length); they are
intersected (``ir.And``) and subtracted (``ir.Diff``) and then encoded into JSON spellings
(``dotjson.jsonschema.jsonstr``) to sit between the quotes. Formats themselves live in ``dotjson.formats``.
"""

from __future__ import annotations

from dotjson import ir
from dotjson.errors import DotjsonError, GrammarError
from dotjson.ir import EMPTY, Ref, alt, lit, seq
from dotjson.ir.analysis import regular_nullable
from dotjson.jsonschema.atoms import RuleRef
from dotjson.jsonschema.jsonstr import encode_string_language
from dotjson.jsonschema.nodes import StringNode
from dotjson.jsonschema.values import _ENC_CACHE, FALSE, TRUE


def warm_format_languages() -> None:
    """Build the process's cached languages of every supported ``format`` (decoded, and as JSON
    text): ~20 ms once, instead of a few ms in the first schema that names each format (called
    by :func:`dotjson.warmup`)."""
    from dotjson.formats import FORMATS, SUPPORTED_FORMATS, format_to_ir
    from dotjson.jsonschema.jsonstr import SPELLINGS, spellings

    cold = {f.name for f in FORMATS if not f.warm}
    for name in sorted(SUPPORTED_FORMATS - cold):
        node = format_to_ir(name)
        if node is not None:
            for sp in SPELLINGS:
                _encoded(("format", name), lambda: node, spellings(sp))


_ANY_SCALAR = ((0, 0xD7FF), (0xE000, ir.MAX_CODEPOINT))


def matches_every_string(node: ir.Node) -> bool:
    """Whether a decoded-string language (a ``pattern``'s) plainly holds every string: ``X*`` of
    every character, or a sequence of nullable parts with one of them (a search for a nullable
    pattern, as for ``.*``). A sufficient test."""
    def every(n) -> bool:
        return (type(n) is ir.Repeat and n.min == 0 and n.max is None and type(n.item) is ir.Chars
                and n.item.ranges in (_ANY_SCALAR, ((0, ir.MAX_CODEPOINT),)))

    if every(node):
        return True
    if type(node) is not ir.Seq or not any(every(x) for x in node.items):
        return False
    try:
        return all(regular_nullable(x) for x in node.items)
    except GrammarError:
        return False  # (a rule reference: not a pattern's language)


def _fold(node: ir.Node, leaf, seq_, alt_, rep_):
    """A value of a plain decoded-string language computed bottom up, iteratively: ``leaf(x)``
    for a node that is not a ``Seq``/``Alt``/``Repeat``, ``seq_(values)`` / ``alt_(values)`` of
    the children's, ``rep_(x, value)`` of a repetition's item."""
    memo: dict = {}
    stack = [(node, False)]
    while stack:
        x, done = stack.pop()
        if id(x) in memo:
            continue
        t = type(x)
        if t is ir.Seq or t is ir.Alt or t is ir.Repeat:
            kids = (x.item,) if t is ir.Repeat else x.items
            if not done:
                stack.append((x, True))
                stack.extend((k, False) for k in kids)
                continue
            got = [memo[id(k)] for k in kids]
            memo[id(x)] = seq_(got) if t is ir.Seq else alt_(got) if t is ir.Alt else rep_(x, got[0])
        else:
            memo[id(x)] = leaf(x)
    return memo[id(node)]


#: answers of :func:`shortest_string` and :func:`_unbounded` by node identity (the node kept
#: alive with its answer): a ``format``'s language is one node per process, ~2,400 nodes for
#: ``date-time``, and every schema using it asked again (~0.8 ms each, a third of a new schema's
#: rule compiles in its first masks)
_NODE_FACTS: dict = {}


def _node_fact(tag: str, node: ir.Node, compute):
    key = (tag, id(node))
    hit = _NODE_FACTS.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    value = compute(node)
    if len(_NODE_FACTS) >= 1024:
        _NODE_FACTS.clear()
    _NODE_FACTS[key] = (node, value)
    return value


def shortest_string(node: ir.Node) -> int | None:
    """The length (in characters) of the shortest string of a decoded-string language, where its
    plain structure tells (literals, character sets, sequences, alternatives, repetitions);
    ``None`` when it holds anything else (``And``, ``Diff``, a reference) or no string."""
    return _node_fact("shortest", node, _shortest_string)


def _shortest_string(node: ir.Node) -> int | None:

    def leaf(x):
        if type(x) is ir.Lit:
            return len(x.text)
        return 1 if type(x) is ir.Chars and x.ranges else None

    return _fold(node, leaf, lambda got: None if None in got else sum(got),
                 lambda got: min(got) if got and None not in got else None,
                 lambda x, g: 0 if x.min == 0 else None if g is None else x.min * g)


def _unbounded(node: ir.Node) -> bool:
    """Whether a plain decoded-string language has a repetition without an upper bound (``*``,
    ``+``, ``{m,}``): a pattern without one bounds its strings itself (``^(ab){0,9}$``)."""
    return _node_fact("unbounded", node, _unbounded_walk)


def _unbounded_walk(node: ir.Node) -> bool:
    stack, seen = [node], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        t = type(x)
        if t is ir.Repeat:
            if x.max is None:
                return True
            stack.append(x.item)
        elif t is ir.Seq or t is ir.Alt:
            stack.extend(x.items)
    return False


def has_some_string(node: ir.Node) -> bool:
    """Whether a decoded-string language (ref-free) plainly has a string: ``And``/``Diff`` are not
    looked into (``False`` means "not known"). A sufficient test."""

    def leaf(x):
        return type(x) is ir.Lit or (type(x) is ir.Chars and bool(x.ranges))

    return _fold(node, leaf, all, any, lambda x, g: x.min == 0 or g)


def _encoded(key, decoded, spell=None):
    """The encoded (JSON spelling) language of string-language handle ``key`` under the spelling
    policy ``spell`` (default: every spelling): the process's cached one, or the encoding of
    ``decoded()`` (its decoded language), cached."""
    ck = key if spell is None or not spell.canonical else (spell.name, key)
    hit = _ENC_CACHE.get(ck)
    if hit is None:
        if len(_ENC_CACHE) > 4096:
            ir.unshare(_ENC_CACHE.values())
            _ENC_CACHE.clear()
        enc = encode_string_language if spell is None else spell.encode_string_language
        hit = _ENC_CACHE[ck] = ir.share(enc(decoded()))
    return hit


class StringBuilder:
    """The compiler's part for strings: their languages (also the key language of
    ``propertyNames``), remembered per string node.

    It reads of the compiler ``tr``: the spelling policy (``jsonstr``, ``enc_text``), the base
    rules' prefix (``bp``), the generation bounds (``gen_bounds``), and phase 1's answers
    (``regex``, ``str_node``, ``dnf``, ``merge``, ``inline``, ``expand_refs``, ``satisfies``,
    ``expr_where``).
    """

    def __init__(self, tr):
        self.tr = tr
        self.string_cache: dict = {}  # (patterns, not patterns, lengths, strings excluded) -> content

    def enc_pattern(self, p, where):
        self.tr.regex(p, where, "patternProperties")
        return self.enc_handle(("pattern", p))

    def enc_handle(self, key):
        """Encoded (JSON spelling) language of a string-language handle, cached per process."""
        return _encoded(key, lambda: self.tr.str_node(key), self.tr.jsonstr)

    def string_content(self, t: StringNode, not_enum) -> ir.Node:
        """The encoded content language (between the quotes) of string node ``t``, but the
        strings ``not_enum`` excludes."""
        tr = self.tr
        key = (tuple(t.patterns), tuple(t.not_patterns), t.min_length, t.max_length,
               tuple(sorted(c[1] for c in not_enum if c[0] == "s")))
        hit = self.string_cache.get(key)
        if hit is not None:
            return hit
        pos = [self.enc_handle(h) for h in dict.fromkeys(t.patterns)]
        if t.min_length > 0 or t.max_length is not None:
            pos.append(tr.jsonstr.string_of_length(t.min_length, t.max_length))
        neg = [self.enc_handle(h) for h in dict.fromkeys(t.not_patterns)] + [tr.enc_text((s)) for s in key[4]]
        if any(p == EMPTY for p in pos):
            content = EMPTY
        else:
            if not pos:
                content = tr.jsonstr.json_string_content()
            elif len(pos) == 1:
                content = pos[0]
            else:
                content = ir.And(tuple({id(x): x for x in pos}.values()))
            neg = [x for x in neg if x != EMPTY]
            if neg:
                content = ir.Diff(content, alt(*neg))
        self.string_cache[key] = content
        return content

    def bounded_string(self) -> ir.Node:
        """A string of at most the generation bound's characters (``bounds="generation"``)."""
        return self.build_string(StringNode(), ())

    def _may_bound(self, t: StringNode) -> bool:
        """Whether the generation bound on length may apply to ``t`` without emptying it: no
        language, or one pattern (or format) with strings of any length (a pattern whose
        repetitions are all bounded bounds its strings itself) whose shortest string is plainly
        within the bound, and nothing taken away (``not``)."""
        if not t.patterns:
            return True
        if len(t.patterns) > 1 or t.not_patterns:
            return False
        if t.patterns[0] == ("format", "regex"):
            # a pattern's language intersected with a length count: the emptiness search over
            # that product spends its fuel at the first mask inside the value (docs/keywords.md)
            return False
        try:
            lang = self.tr.str_node(t.patterns[0])
        except (KeyError, DotjsonError):
            return False
        return self.bound_fits(lang)

    def bound_fits(self, lang: ir.Node) -> bool:
        """Whether the generation bound on length may cut decoded-string language ``lang`` (a
        pattern's): it has strings of any length, and its shortest plainly fits the bound."""
        least = shortest_string(lang)
        return least is not None and least <= self.tr.gen_bounds["string_length"] and _unbounded(lang)

    def build_string(self, t: StringNode, not_enum) -> ir.Node:
        tr = self.tr
        if tr.gen_bounds is not None and t.max_length is None \
                and t.min_length <= tr.gen_bounds["string_length"] and self._may_bound(t):
            # the generation bound on strings without maxLength (not where minLength asks for more)
            t = StringNode(patterns=t.patterns, not_patterns=t.not_patterns, min_length=t.min_length,
                           max_length=tr.gen_bounds["string_length"])
        if not t.patterns and not t.not_patterns and t.min_length == 0 and t.max_length is None \
                and not any(c[0] == "s" for c in not_enum):
            return Ref(tr.bp + "json_string")
        content = self.string_content(t, not_enum)
        if content == EMPTY:
            return EMPTY
        return seq(lit('"'), content, lit('"'))

    def key_language(self, e) -> ir.Node:
        """Encoded content language of the strings an expression accepts (for propertyNames)."""
        tr = self.tr
        if e == TRUE:
            return tr.jsonstr.json_string_content()
        if e == FALSE:
            return EMPTY
        alts = []
        branches = []
        for br in tr.dnf(e):
            if any(type(a) is RuleRef for a in br):
                branches.extend(tr.inline(br[0].target, tr.expr_where(e)) if len(br) == 1
                                else tr.expand_refs(br, tr.expr_where(e)))
            else:
                branches.append(br)
        for br in branches:
            m = tr.merge(br)
            if "string" not in m.types:
                continue
            if m.enum is not None:
                alts.extend(tr.enc_text((c[1])) for c in m.enum
                            if c[0] == "s" and tr.satisfies(c[1], br))
                continue
            alts.append(self.string_content(m.string, m.not_enum))
        return alt(*alts)

