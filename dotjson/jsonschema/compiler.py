"""Phase 2: the normal form of a sub-schema to grammar rules.

:class:`Compiler` turns the branches of an expression into IR, one JSON type at a time (numbers,
strings, arrays and objects in their own modules). Sub-schemas referred to by a branch become rule
references (:meth:`Compiler.node_of`); their bodies are built later, by :meth:`Compiler.body`, when
someone (the automaton) first asks for them.
"""

from __future__ import annotations

import itertools
import warnings

from dotjson import ir
from dotjson.errors import SchemaError, UnsupportedSchemaError
from dotjson.ir import EMPTY, EPS, Ref, alt, lit, repeat, seq
from dotjson.jsonschema.arrays import ArrayBuilder
from dotjson.jsonschema.normalize import Normalizer
from dotjson.jsonschema.numbers import NumberBuilder
from dotjson.jsonschema.objects import ObjectBuilder
from dotjson.jsonschema.strings import StringBuilder
from dotjson.jsonschema.values import _ENC_CHAR, _NAME_JUNK, _NUM, FALSE, TRUE, _small


class Compiler(Normalizer, NumberBuilder, StringBuilder, ArrayBuilder, ObjectBuilder):
    """Builds rule bodies from normal forms (phase 2)."""

    def new_name(self, hint: str) -> str:
        h = _NAME_JUNK.sub("_", hint.lower()).strip("_")[-40:].strip("_")
        base = f"s_{h}" if h else "s"
        self.counter += 1
        name = base
        while name in self.names_used:
            self.counter += 1
            name = f"{base}_{self.counter}"
        self.names_used.add(name)
        return name

    def node_of(self, e) -> ir.Node:
        """The IR node of an expression's language (a Ref to its rule, or a small inline node)."""
        if e == TRUE:
            return Ref("json_value")
        if e == FALSE:
            return EMPTY
        hit = self.rule_of.get(e)
        if hit is not None:
            return hit
        prog = self.in_progress.get(e)
        if prog is not None:
            prog[1] = True
            return Ref(prog[0])
        name = self.new_name(self.hint(e))
        prog = [name, False]
        self.in_progress[e] = prog
        try:
            body = self.build(e)
        except UnsupportedSchemaError as err:
            if not (self.lenient and self.strict == 0):
                raise
            # values sit in positive positions only: any JSON value over-approximates
            warnings.warn(f"dotjson: ignoring the schema at {self.expr_where(e) or '/'} ({err}); the grammar "
                          "over-approximates", stacklevel=3)
            body = Ref("json_value")
        finally:
            del self.in_progress[e]
        if not prog[1] and (_small(body) or body == EMPTY):
            self.names_used.discard(name)
            self.rule_of[e] = body
            return body
        self.rules[name] = body
        self.rule_of[e] = Ref(name)
        return Ref(name)

    def hint(self, e) -> str:
        if e[0] == "loc":
            toks = [t for t in e[2].split("/") if t and t not in ("properties", "$defs", "definitions", "items")]
            return "_".join(toks[-2:]) or "root"
        if e[0] == "not":
            return "not_" + self.hint(e[1])
        if e[0] == "and":
            return "all_" + self.hint(e[1][0])
        return e[0]

    def build(self, e) -> ir.Node:
        where = self.expr_where(e)
        nodes = []
        for br in self.dnf(e):
            if len(br) == 1 and br[0][0] == "ruleref":
                nodes.append(self.node_of(br[0][1]))
            else:
                nodes.append(self.build_branch(br, where))
        return alt(*nodes)

    def build_branch(self, br, where) -> ir.Node:
        if any(a[0] == "ruleref" for a in br):
            return alt(*(self.build_branch(b, where) for b in self.expand_refs(br, where)))
        m = self.merge(br)
        if m.enum is not None:
            vals = [c for c in m.enum if self.satisfies(self.literal_cache[("v", c)], br)]
            vals.sort(key=repr)
            return alt(*(self.literal(c) for c in vals))
        out = []
        ts = m.types
        if "null" in ts and ("n",) not in m.notenum:
            out.append(lit("null"))
        if "boolean" in ts:
            for b in (True, False):
                if ("b", b) not in m.notenum:
                    out.append(lit("true" if b else "false"))
        if ts & _NUM:
            out.append(self.build_number(m, "integer" in ts, "nonint" in ts, where))
        if "string" in ts:
            out.append(self.build_string(m))
        if "array" in ts:
            out.append(self.build_array(m, where))
        if "object" in ts:
            out.append(self.build_object(m, where))
        return alt(*out)

    # ------------------------------------------------------------------ literals
    def literal(self, c) -> ir.Node:
        key = ("lit", c)
        hit = self.literal_cache.get(key)
        if hit is not None:
            return hit
        k = c[0]
        if k == "n":
            node = lit("null")
        elif k == "b":
            node = lit("true" if c[1] else "false")
        elif k == "x":
            node = self.number_node(c[1], False, c[1], False, (), (), (), True, True, "")
        elif k == "s":
            node = seq(lit('"'), self.enc_text((c[1])), lit('"'))
        elif k == "a":
            if not c[1]:
                node = seq(lit("["), self.ws, lit("]"))
            else:
                items = [self.literal(x) for x in c[1]]
                body = [items[0]]
                for x in items[1:]:
                    body += [self.sep, x]
                node = seq(lit("["), self.ws, *body, self.ws, lit("]"))
        else:
            pairs = c[1]
            if not pairs:
                node = seq(lit("{"), self.ws, lit("}"))
            else:
                mems = [seq(lit('"'), self.enc_text((kk)), lit('"'), self.colon, self.literal(vv)) for kk, vv in pairs]
                orders = itertools.permutations(mems) if len(mems) <= 3 else [mems]
                alts = []
                for order in orders:
                    body = [order[0]]
                    for x in order[1:]:
                        body += [self.sep, x]
                    alts.append(seq(lit("{"), self.ws, *body, self.ws, lit("}")))
                node = alt(*alts)
        self.literal_cache[key] = node
        return node

    def enc_text(self, text: str) -> ir.Node:
        """All JSON spellings of the string ``text`` (between the quotes), cached per character."""
        parts = []
        for ch in text:
            hit = _ENC_CHAR.get(ch)
            if hit is None:
                hit = _ENC_CHAR[ch] = self.jsonstr.encode_chars(ir.Chars(((ord(ch), ord(ch)),)))
            parts.append(hit)
        return seq(*parts)

    def enc(self, node) -> ir.Node:
        # keyed by identity: IR nodes do not cache their hash, and format languages are big
        hit = self.enc_cache.get(id(node))
        if hit is None:
            self.keep.append(node)
            hit = self.enc_cache[id(node)] = self.jsonstr.encode_string_language(node)
        return hit



def _refs(node: ir.Node, visited: set) -> set:
    """Rule names referenced anywhere under ``node`` (shared sub-trees visited once)."""
    found = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in visited:
            continue
        visited.add(id(n))
        t = type(n)
        if t is ir.Ref:
            found.add(n.name)
        elif t is ir.Seq or t is ir.Alt:
            stack.extend(n.items)
        elif t is ir.Repeat:
            stack.append(n.item)
        # And/Diff are regular (no references inside), Lit/Chars are leaves
    return found


def _left_recursion_check(rules: dict, value_rules: set, where_of) -> None:
    """Raise SchemaError when a sub-schema rule reaches itself without consuming input.

    Only the rules of sub-schemas (``value_rules``) can form such a cycle (through ``$ref``
    aliases and ``anyOf`` branches); every other rule starts with a token. No JSON value is
    empty, so a reference counts as non-nullable.
    """

    def null(n) -> bool:
        t = type(n)
        if t is ir.Lit:
            return n.text == ""
        if t is ir.Seq:
            return all(null(x) for x in n.items)
        if t is ir.Alt:
            return any(null(x) for x in n.items)
        if t is ir.Repeat:
            return n.min == 0 or null(n.item)
        return False

    def left(n, acc):
        t = type(n)
        if t is ir.Ref:
            acc.add(n.name)
        elif t is ir.Seq:
            for x in n.items:
                left(x, acc)
                if not null(x):
                    break
        elif t is ir.Alt:
            for x in n.items:
                left(x, acc)
        elif t is ir.Repeat:
            left(n.item, acc)

    graph = {}
    for name in value_rules:
        acc: set = set()
        left(rules[name], acc)
        graph[name] = [x for x in acc if x in value_rules]
    color = dict.fromkeys(graph, 0)
    for root in graph:
        if color[root]:
            continue
        stack = [(root, iter(graph[root]))]
        color[root] = 1
        while stack:
            s, it = stack[-1]
            for t in it:
                if color[t] == 1:
                    raise SchemaError("a $ref cycle that never consumes input (left recursion): the schema "
                                      "refers to itself without descending into a property or item",
                                      where_of(t), "$ref")
                if color[t] == 0:
                    color[t] = 1
                    stack.append((t, iter(graph[t])))
                    break
            else:
                color[s] = 2
                stack.pop()


def _prune_unproductive(rules: dict, start: str) -> dict:
    """Replace references to rules that derive no finite text (an infinite ``required`` recursion)
    by the empty language, so the automaton never enters a value it cannot finish."""
    deps: dict[str, set] = {}
    refs_of: dict[str, set] = {}
    for name, body in rules.items():
        r = _refs(body, set())
        refs_of[name] = r
        for x in r:
            deps.setdefault(x, set()).add(name)
    productive: set = set()

    def prod(n) -> bool:
        t = type(n)
        if t is ir.Lit or t is ir.And or t is ir.Diff:
            return True
        if t is ir.Chars:
            return bool(n.ranges)
        if t is ir.Seq:
            return all(prod(x) for x in n.items)
        if t is ir.Alt:
            return any(prod(x) for x in n.items)
        if t is ir.Repeat:
            return n.min == 0 or prod(n.item)
        return n.name in productive

    work = list(rules)
    while work:
        name = work.pop()
        if name in productive or name not in rules:
            continue
        if prod(rules[name]):
            productive.add(name)
            work.extend(d for d in deps.get(name, ()) if d not in productive)
    dead = set(rules) - productive
    if not dead:
        return rules
    if start in dead:
        raise SchemaError("the schema accepts no JSON value (its language is empty: a required value "
                          "recurses forever)", pointer="")

    def sub(n):
        t = type(n)
        if t is ir.Ref:
            return EMPTY if n.name in dead else n
        if t is ir.Seq:
            return seq(*(sub(x) for x in n.items))
        if t is ir.Alt:
            return alt(*(sub(x) for x in n.items))
        if t is ir.Repeat:
            return repeat(sub(n.item), n.min, n.max)
        return n

    return {k: (sub(v) if refs_of[k] & dead else v) for k, v in rules.items() if k not in dead}
