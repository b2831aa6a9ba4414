"""DS4 chat rendering in Python, written to produce exactly the text gateway/protocol/chat_render
renders for the same OpenAI-shaped request (tools block, hoisted system text, <tool_result> runs,
<think> kept when the conversation has tool context, canonical DSML tool calls). The training corpus
is rendered with it; the C++ evaluator renders the held-out requests with the real renderer, and
`tinyagent_eval --render` lets one diff the two.

Also here: the DSML tool-call block the model is trained to emit (same canonical form).
"""
import json

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
DSML = "｜DSML｜"
SPECIALS = [BOS, EOS, USER, ASSISTANT, THINK_OPEN, THINK_CLOSE, DSML]

TOOLS_HEAD = (
    "## Tools\n\n"
    "You have access to a set of tools to help answer the user question. "
    "You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n"
    "<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>\n\n"
    "String parameters should be specified as raw text and set `string=\"true\"`. "
    "Preserve characters such as `>`, `&`, and `&&` exactly; never replace normal string characters with XML "
    "or HTML entity escapes. "
    "Only if a string value itself contains the exact closing parameter tag `</｜DSML｜parameter>`, write that "
    "tag as `&lt;/｜DSML｜parameter>` inside the value. "
    "For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
    "<think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n")
TOOLS_TAIL = ("\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls. "
              "Use the exact parameter names from the schemas.")
PARAM_CLOSE = "</｜DSML｜parameter>"


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def escape_attribute(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def dsml_block(calls):
    """calls: [(name, [(key, value), ...])] in argument order -> the canonical DSML block."""
    out = "\n\n<｜DSML｜tool_calls>\n"
    for name, args in calls:
        out += '<｜DSML｜invoke name="' + escape_attribute(name) + '">\n'
        for k, v in args:
            if isinstance(v, str):
                out += ('<｜DSML｜parameter name="' + escape_attribute(k) + '" string="true">' +
                        v.replace(PARAM_CLOSE, "&lt;/｜DSML｜parameter>") + PARAM_CLOSE + "\n")
            else:
                out += ('<｜DSML｜parameter name="' + escape_attribute(k) + '" string="false">' +
                        compact(v).replace(PARAM_CLOSE, "\\u003c/｜DSML｜parameter>") + PARAM_CLOSE + "\n")
        out += "</｜DSML｜invoke>\n"
    return out + "</｜DSML｜tool_calls>"


def render(messages, tools, thinking=True):
    """Renders an OpenAI-shaped conversation. messages: dicts with role, content, optional
    reasoning_content and tool_calls ([{"function": {"name", "arguments" (JSON text)}}]).
    Returns (text, spans) where spans are [begin, end) character ranges of assistant-generated
    text (what the model is trained to produce), each ending with EOS."""
    tools_active = bool(tools)
    tool_context = tools_active
    last_user = -1
    for i, m in enumerate(messages):
        if (m["role"] == "assistant" and m.get("tool_calls")) or m["role"] == "tool":
            tool_context = True
        if m["role"] in ("user", "tool"):
            last_user = i
    out = [BOS]
    system = []
    if tools_active:
        system.append(TOOLS_HEAD + "\n".join(compact(t["function"] if "function" in t else t) for t in tools) +
                      TOOLS_TAIL)
    system += [m["content"] for m in messages if m["role"] in ("system", "developer")]
    out.append("\n\n".join(system))
    spans = []
    pending_assistant = False
    pending_tool = False
    pos = lambda: sum(len(x) for x in out)
    for i, m in enumerate(messages):
        r = m["role"]
        if r in ("system", "developer"):
            continue
        if r == "user":
            out.append(USER + m["content"])
            pending_assistant, pending_tool = True, False
        elif r == "tool":
            if not pending_tool:
                out.append(USER)
            out.append("<tool_result>" + m["content"].replace("</tool_result>", "&lt;/tool_result>") + "</tool_result>")
            pending_assistant, pending_tool = True, True
        else:
            start = None
            if pending_assistant:
                out.append(ASSISTANT)
                keep = thinking and (tool_context or i > last_user)
                if keep:
                    out.append(THINK_OPEN)
                    start = pos()
                    out.append((m.get("reasoning_content") or "") + THINK_CLOSE)
                else:
                    out.append(THINK_CLOSE)
                    start = pos()
            if start is None:
                start = pos()
            out.append(m.get("content") or "")
            calls = m.get("tool_calls") or []
            if calls:
                out.append(dsml_block([(c["function"]["name"], list(json.loads(c["function"]["arguments"]).items()))
                                       for c in calls]))
            out.append(EOS)
            spans.append((start, pos()))
            pending_assistant = pending_tool = False
    if pending_assistant:
        out.append(ASSISTANT + (THINK_OPEN if thinking else THINK_CLOSE))
    return "".join(out), spans
