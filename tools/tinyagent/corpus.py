"""Synthetic agent conversations in the DS4 chat format, for training and evaluating the tiny model.

A conversation is an OpenAI-shaped request (tools + messages) plus the assistant turns the model
must produce: reasoning inside <think>, DSML tool calls whose arguments come from the user's words,
tool results, and final answers that use the result; plain chat turns need no tool. Tool schemas
are drawn per conversation from a space of names, parameter names and descriptions per domain, so
the model has to read the tools block rather than memorise one schema. Whole schema variants are
held out (HELDOUT_* below): their tool names and parameter names never occur in training, and the
evaluation reports them separately.

Everything is a pure function of the seed (random.Random(seed)).
"""
import json
import random

# ---------------------------------------------------------------------------------------------
# Values the user's words carry.
CITIES = ["Paris", "Rome", "Berlin", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo", "Dublin", "Tokyo",
          "Seoul", "Lima", "Cairo", "Nairobi", "Boston", "Denver", "Austin", "Chicago", "Seattle", "Toronto",
          "Sydney", "Perth", "Mumbai", "Delhi", "Bangkok", "Hanoi", "Zurich", "Geneva", "Munich", "Hamburg",
          "Milan", "Naples", "Athens", "Warsaw", "Krakow", "Helsinki", "Stockholm", "Copenhagen", "Brussels",
          "Amsterdam", "Lyon", "Porto", "Seville", "Valencia", "Montreal", "Vancouver", "Santiago", "Bogota",
          "Quito", "Havana", "Dakar", "Accra", "Lagos", "Tunis", "Istanbul", "Ankara", "Tbilisi", "Baku",
          "Riga", "Vilnius", "Tallinn", "Minsk", "Kyiv", "Sofia", "Bucharest", "Belgrade", "Zagreb", "Split"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "foggy", "snowy", "stormy", "clear", "humid", "mild"]
UNITS = [("km", "miles"), ("miles", "km"), ("kg", "pounds"), ("pounds", "kg"), ("celsius", "fahrenheit"),
         ("fahrenheit", "celsius"), ("meters", "feet"), ("feet", "meters"), ("liters", "gallons"),
         ("gallons", "liters"), ("inches", "cm"), ("cm", "inches"), ("grams", "ounces"), ("ounces", "grams")]
DIRS = ["src", "docs", "notes", "data", "config", "logs", "tests", "scripts", "build", "home/anna", "etc",
        "reports", "assets", "lib", "tmp", "projects/alpha", "projects/beta", "var/log", "music", "photos"]
FILES = ["main.cpp", "README.md", "todo.txt", "report.pdf", "notes.md", "config.toml", "server.log",
         "budget.csv", "plan.txt", "index.html", "style.css", "app.py", "setup.cfg", "data.json",
         "Makefile", "draft.docx", "photo.jpg", "song.mp3", "schema.sql", "build.sh", "LICENSE", "init.lua"]
OPS = [("+", "plus"), ("-", "minus"), ("*", "times"), ("/", "divided by")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
EVENTS = ["team meeting", "dentist", "lunch with Sam", "project review", "gym", "flight to Rome",
          "call with Maria", "standup", "budget review", "yoga class", "doctor visit", "code review",
          "birthday party", "interview", "piano lesson", "book club"]
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA", "IBM", "INTC", "ORCL", "SAP", "SONY", "NFLX"]
CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "NOK", "INR", "BRL", "MXN"]
PEOPLE = ["Anna", "Ben", "Carla", "David", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kara",
          "Liam", "Mona", "Nils", "Olga", "Pedro", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wen", "Yusuf", "Zoe"]
DOMAINS_MAIL = ["example.com", "mail.org", "work.net", "corp.io"]


def num(rng, lo, hi, decimals=None):
    if decimals is None:
        decimals = rng.choice([0, 0, 0, 1])
    v = rng.uniform(lo, hi)
    return int(v) if decimals == 0 else round(v, decimals)


def fmt_num(v):
    return json.dumps(v)


# ---------------------------------------------------------------------------------------------
# Schema space per domain. name parts and parameter names are drawn per conversation; HELDOUT
# holds the variants only the evaluation uses.
DOMAINS = {
    "weather": dict(
        verbs=["get", "fetch", "lookup", "check", "query", "current"], nouns=["weather", "forecast", "conditions"],
        heldout_names=["sky_report", "obtain_meteo", "weatherNow"],
        params=[["location", "city", "place", "where"]], heldout_params=[["locality", "town"]],
        descs=["Get the current weather for a city.", "Returns the weather forecast for a location.",
               "Look up current weather conditions in a city.", "Weather report for a place."],
        pdescs=["City name", "The city to get the weather for", "Location name"]),
    "convert": dict(
        verbs=["convert", "unit", "transform", "change"], nouns=["units", "measure", "quantity", "unit"],
        heldout_names=["rescale_amount", "measureSwap"],
        params=[["value", "amount", "quantity", "number"], ["from_unit", "source_unit", "from", "unit_in"],
                ["to_unit", "target_unit", "to", "unit_out"]],
        heldout_params=[["magnitude", "size"], ["origin_unit", "src"], ["dest_unit", "dst"]],
        descs=["Convert a value from one unit to another.", "Unit conversion between measurement units.",
               "Converts an amount between units of measure."],
        pdescs=["Numeric value", "Unit to convert from", "Unit to convert to"]),
    "file": dict(
        verbs=["read", "get", "stat", "lookup", "find", "inspect"], nouns=["file", "file_info", "path", "document"],
        heldout_names=["peek_disk_entry", "fileProbe"],
        params=[["path", "file_path", "filename", "file"]], heldout_params=[["target", "entry"]],
        descs=["Look up a file and return its size and modification date.", "Get information about a file on disk.",
               "Returns metadata of a file given its path."],
        pdescs=["Path of the file", "File path", "The file to look up"]),
    "math": dict(
        verbs=["calculate", "compute", "eval", "solve", "run"], nouns=["expression", "math", "arithmetic", "sum"],
        heldout_names=["crunch_numbers", "arithmeticEngine"],
        params=[["expression", "expr", "formula", "input"]], heldout_params=[["equation", "term"]],
        descs=["Evaluate an arithmetic expression.", "Calculator for arithmetic expressions.",
               "Computes the result of a math expression."],
        pdescs=["Arithmetic expression", "The expression to evaluate", "Math expression"]),
    "calendar": dict(
        verbs=["list", "get", "show", "read", "check"], nouns=["events", "calendar", "agenda", "schedule"],
        heldout_names=["diary_entries", "planner_day"],
        params=[["date", "day", "when", "on_date"]], heldout_params=[["day_of", "calendar_date"]],
        descs=["List the calendar events on a date.", "Get the agenda for a given day.",
               "Returns scheduled events for a date."],
        pdescs=["Date in YYYY-MM-DD form", "The day to look up", "Date"]),
    "stock": dict(
        verbs=["get", "fetch", "quote", "lookup"], nouns=["stock_price", "quote", "share_price", "ticker"],
        heldout_names=["equity_value", "marketTicker"],
        params=[["symbol", "ticker", "stock", "code"]], heldout_params=[["instrument", "listing"]],
        descs=["Get the latest stock price for a ticker symbol.", "Returns the current share price.",
               "Stock quote lookup by symbol."],
        pdescs=["Ticker symbol", "Stock symbol", "The ticker"]),
    "currency": dict(
        verbs=["convert", "exchange", "fx"], nouns=["currency", "money", "rate", "cash"],
        heldout_names=["swap_tender", "forexCalc"],
        params=[["amount", "value", "sum", "money"], ["from_currency", "base", "from_ccy", "source"],
                ["to_currency", "target", "to_ccy", "quote"]],
        heldout_params=[["total", "qty"], ["sell", "have"], ["buy", "want"]],
        descs=["Convert an amount of money between currencies.", "Currency exchange calculator.",
               "Converts money from one currency to another."],
        pdescs=["Amount of money", "Currency code to convert from", "Currency code to convert to"]),
    "contact": dict(
        verbs=["find", "get", "lookup", "search"], nouns=["contact", "email", "person", "address_book"],
        heldout_names=["whois_colleague", "peopleDirectory"],
        params=[["name", "person", "contact_name", "who"]], heldout_params=[["full_name", "member"]],
        descs=["Find the email address of a contact by name.", "Look up a person in the address book.",
               "Returns contact details for a name."],
        pdescs=["Name of the person", "Contact name", "Who to look up"]),
}


def make_name(rng, verb, noun, style):
    if style == 0:
        return verb + "_" + noun
    if style == 1:
        parts = (verb + "_" + noun).split("_")
        return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
    if style == 2:
        return noun + "_" + verb
    return verb + "_" + noun + rng.choice(["_v2", "_tool", "_api", "s"])


def heldout_name_set():
    names = set()
    for d in DOMAINS.values():
        names.update(d["heldout_names"])
    return names


def draw_schema(rng, domain, heldout):
    """Returns a tool: dict(domain, name, params=[(pname, ptype)], schema=OpenAI tool object)."""
    d = DOMAINS[domain]
    if heldout:
        name = rng.choice(d["heldout_names"])
        pnames = [rng.choice(opts) for opts in d["heldout_params"]]
    else:
        while True:
            name = make_name(rng, rng.choice(d["verbs"]), rng.choice(d["nouns"]), rng.randrange(4))
            if name not in heldout_name_set():
                break
        pnames = [rng.choice(opts) for opts in d["params"]]
    ptypes = {"convert": ["number", "string", "string"], "currency": ["number", "string", "string"]}.get(
        domain, ["string"] * len(pnames))
    props = {}
    for i, (p, t) in enumerate(zip(pnames, ptypes)):
        prop = {"type": t}
        if rng.random() < 0.3:
            prop["description"] = rng.choice(d["pdescs"]) if len(pnames) == 1 else d["pdescs"][i]
        props[p] = prop
    params = {"type": "object", "properties": props}
    if rng.random() < 0.4:
        params["required"] = list(pnames)
    fn = {"name": name, "description": rng.choice(d["descs"]), "parameters": params}
    return dict(domain=domain, name=name, params=list(zip(pnames, ptypes)),
                schema={"type": "function", "function": fn})


# ---------------------------------------------------------------------------------------------
# One task per domain: the user's request, the arguments, a tool result and the answer using it.
def task(rng, domain, pools=None):
    """Returns dict(user, values (argument values in parameter order), result (dict), answer,
    facts (strings the answer must contain), intent (reasoning phrase)). `pools` (corpus v3)
    replaces the value lists (CITIES, SYMBOLS, PEOPLE, DIRS, FILES, EVENTS) by others."""
    pl = pools or {}
    cities, symbols, people = pl.get("cities", CITIES), pl.get("symbols", SYMBOLS), pl.get("people", PEOPLE)
    dirs, files, events = pl.get("dirs", DIRS), pl.get("files", FILES), pl.get("events", EVENTS)
    if domain == "weather":
        city = rng.choice(cities)
        user = rng.choice(["What's the weather in {c}?", "How is the weather in {c} today?",
                           "Is it raining in {c}?", "weather {c}", "Can you check the weather for {c}?",
                           "Tell me the current weather in {c}.", "What is the forecast for {c}?"]).format(c=city)
        t = num(rng, -10, 38, 0)
        cond = rng.choice(CONDITIONS)
        res = {"location": city, "temperature": t, "condition": cond}
        ans = rng.choice(["It is {t} degrees and {w} in {c}.", "In {c} it is currently {w} with {t} degrees.",
                          "The weather in {c}: {w}, {t} degrees."]).format(t=t, w=cond, c=city)
        return dict(user=user, values=[city], result=res, answer=ans, facts=[str(t), cond],
                    intent="the weather in " + city)
    if domain == "convert":
        fu, tu = rng.choice(UNITS)
        v = num(rng, 1, 500)
        user = rng.choice(["Convert {v} {a} to {b}.", "How many {b} is {v} {a}?", "What is {v} {a} in {b}?",
                           "Please convert {v} {a} into {b}.", "{v} {a} to {b}"]).format(v=fmt_num(v), a=fu, b=tu)
        out = round(v * rng.uniform(0.3, 3.0), 2)
        res = {"value": out, "unit": tu}
        ans = rng.choice(["{v} {a} is {o} {b}.", "That is {o} {b}.", "{v} {a} equals {o} {b}."]).format(
            v=fmt_num(v), a=fu, o=fmt_num(out), b=tu)
        return dict(user=user, values=[v, fu, tu], result=res, answer=ans, facts=[fmt_num(out)],
                    intent="to convert {} {} to {}".format(fmt_num(v), fu, tu))
    if domain == "file":
        path = rng.choice(dirs) + "/" + rng.choice(files)
        user = rng.choice(["How big is {p}?", "When was {p} last modified?", "Look up the file {p}.",
                           "Can you check {p} for me?", "Show me info about {p}.", "stat {p}"]).format(p=path)
        size = rng.randrange(10, 99999)
        day = "2024-{:02d}-{:02d}".format(rng.randrange(1, 13), rng.randrange(1, 29))
        res = {"path": path, "size_bytes": size, "modified": day}
        ans = rng.choice(["{p} is {s} bytes and was last modified on {d}.",
                          "The file {p} has {s} bytes (modified {d}).",
                          "{p}: {s} bytes, last changed {d}."]).format(p=path, s=size, d=day)
        return dict(user=user, values=[path], result=res, answer=ans, facts=[str(size)],
                    intent="information about the file " + path)
    if domain == "math":
        a, b = rng.randrange(2, 999), rng.randrange(2, 99)
        op, word = rng.choice(OPS)
        expr = "{} {} {}".format(a, op, b)
        r = {"+": a + b, "-": a - b, "*": a * b, "/": round(a / b, 3)}[op]
        user = rng.choice(["What is {e}?", "Calculate {e}.", "Compute {e} please.", "How much is {a} {w} {b}?",
                           "{e} = ?"]).format(e=expr, a=a, b=b, w=word)
        res = {"result": r}
        ans = rng.choice(["{e} = {r}.", "The result is {r}.", "{e} equals {r}."]).format(e=expr, r=fmt_num(r))
        return dict(user=user, values=[expr], result=res, answer=ans, facts=[fmt_num(r)],
                    intent="the result of " + expr)
    if domain == "calendar":
        m, dd = rng.randrange(1, 13), rng.randrange(1, 29)
        date = "2025-{:02d}-{:02d}".format(m, dd)
        user = rng.choice(["What is on my calendar on {d}?", "Do I have anything on {d}?",
                           "Show my agenda for {d}.", "What meetings do I have on {d}?",
                           "List my events for {d}."]).format(d=date)
        evs = rng.sample(events, rng.randrange(1, 3))
        times = sorted("{:02d}:{:02d}".format(rng.randrange(7, 20), rng.choice([0, 15, 30, 45])) for _ in evs)
        res = {"date": date, "events": [{"time": t, "title": e} for t, e in zip(times, evs)]}
        lst = " and ".join("{} at {}".format(e, t) for t, e in zip(times, evs))
        ans = rng.choice(["On {d} you have {l}.", "Your agenda for {d}: {l}."]).format(d=date, l=lst)
        return dict(user=user, values=[date], result=res, answer=ans, facts=[evs[0], times[0]],
                    intent="the events on " + date)
    if domain == "stock":
        s = rng.choice(symbols)
        user = rng.choice(["What is the stock price of {s}?", "How much is {s} trading at?", "Quote for {s}?",
                           "Get me the price of {s} shares."]).format(s=s)
        p = round(rng.uniform(5, 900), 2)
        res = {"symbol": s, "price": p, "currency": "USD"}
        ans = rng.choice(["{s} is trading at {p} USD.", "The current price of {s} is {p} USD."]).format(
            s=s, p=fmt_num(p))
        return dict(user=user, values=[s], result=res, answer=ans, facts=[fmt_num(p)],
                    intent="the stock price of " + s)
    if domain == "currency":
        a, b = rng.sample(CURRENCIES, 2)
        v = num(rng, 5, 5000)
        user = rng.choice(["Convert {v} {a} to {b}.", "How much is {v} {a} in {b}?",
                           "What are {v} {a} worth in {b}?"]).format(v=fmt_num(v), a=a, b=b)
        out = round(v * rng.uniform(0.01, 5), 2)
        res = {"amount": out, "currency": b}
        ans = rng.choice(["{v} {a} is {o} {b}.", "That comes to {o} {b}."]).format(
            v=fmt_num(v), a=a, o=fmt_num(out), b=b)
        return dict(user=user, values=[v, a, b], result=res, answer=ans, facts=[fmt_num(out)],
                    intent="to convert {} {} to {}".format(fmt_num(v), a, b))
    if domain == "contact":
        p = rng.choice(people)
        user = rng.choice(["What is {p}'s email address?", "How can I reach {p}?", "Find the contact for {p}.",
                           "Look up {p} in my contacts."]).format(p=p)
        mail = "{}.{}@{}".format(p.lower(), rng.choice(["k", "m", "s", "t", "r"]), rng.choice(DOMAINS_MAIL))
        res = {"name": p, "email": mail}
        ans = rng.choice(["{p}'s email is {m}.", "You can reach {p} at {m}."]).format(p=p, m=mail)
        return dict(user=user, values=[p], result=res, answer=ans, facts=[mail], intent="the contact of " + p)
    raise ValueError(domain)


PLAIN = [
    ("Hello!", "Hello! How can I help you today?"),
    ("Hi there", "Hi! What can I do for you?"),
    ("Good morning", "Good morning! How can I help?"),
    ("Thanks a lot!", "You are welcome!"),
    ("Thank you", "Glad I could help."),
    ("Who are you?", "I am a small assistant model. I can answer simple questions and use tools."),
    ("What can you do?", "I can chat and call the tools you give me, such as weather or file lookups."),
    ("Tell me a joke.", "Why did the programmer quit his job? Because he did not get arrays."),
    ("How are you?", "I am fine, thank you. How can I help you?"),
    ("What is the capital of France?", "The capital of France is Paris."),
    ("What is the capital of Italy?", "The capital of Italy is Rome."),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo."),
    ("What is the capital of Spain?", "The capital of Spain is Madrid."),
    ("What color is the sky?", "The sky is usually blue during the day."),
    ("What is a cat?", "A cat is a small furry animal that people often keep as a pet."),
    ("Define the word river.", "A river is a large natural stream of water flowing to the sea or a lake."),
    ("Say something nice.", "You are doing a great job today."),
    ("What is Python?", "Python is a popular programming language."),
    ("What is C++?", "C++ is a compiled programming language used for fast software."),
    ("Explain what a CPU is.", "A CPU is the processor that runs the instructions of a computer."),
    ("Goodbye", "Goodbye! Have a nice day."),
    ("Can you help me?", "Of course. What do you need?"),
    ("What day comes after Monday?", "Tuesday comes after Monday."),
    ("How many days are in a week?", "A week has seven days."),
    ("Which is bigger, the sun or the moon?", "The sun is much bigger than the moon."),
    ("Write a short greeting for a card.", "Wishing you a happy day full of joy."),
    ("What is the opposite of hot?", "The opposite of hot is cold."),
    ("Name a fruit.", "An apple is a fruit."),
    ("What language is spoken in Brazil?", "People in Brazil speak Portuguese."),
    ("Is water wet?", "Water makes things wet, so in everyday language, yes."),
    ("Recommend a book.", "You might enjoy a classic like The Hobbit."),
    ("What is an API?", "An API is an interface that lets programs talk to each other."),
    ("Tell me about the ocean.", "The ocean covers most of the Earth and holds most of its water."),
    ("What is love?", "Love is a deep feeling of care for someone."),
    ("Why is the sky blue?", "Sunlight scatters in the air and blue light scatters the most."),
    ("How do I boil an egg?", "Put the egg in boiling water for about eight minutes."),
]
HELDOUT_PLAIN = [
    ("Hey, what's up?", "Not much! How can I help you today?"),
    ("What is the capital of Germany?", "The capital of Germany is Berlin."),
    ("Give me a fun fact.", "Octopuses have three hearts."),
    ("What is a dog?", "A dog is a loyal animal that people often keep as a pet."),
    ("Good night", "Good night! Sleep well."),
    ("What is Rust?", "Rust is a programming language focused on safety and speed."),
    ("How many months are in a year?", "A year has twelve months."),
    ("Name a color.", "Green is a color."),
]
PLAIN_REASON = ["The user is just chatting. No tool is needed.", "This needs no tool; I can answer directly.",
                "A simple question I can answer myself without tools.", "No tool fits this; I will reply directly."]


def reasoning_args(tool, t):
    """The call's arguments as the reasoning names them: "city Paris, unit km"."""
    return ", ".join("{} {}".format(p, fmt_num(v) if not isinstance(v, str) else v)
                     for (p, _), v in zip(tool["params"], t["values"]))


CALL_REASON = ["The user wants {i}. The {n} tool fits. I will call {n} with {a}.",
               "The user asks for {i}. I should call {n} with {a}.",
               "To get {i} I use {n} with {a}."]


def reasoning_call(rng, tool, t, templates=None):
    """The call's reasoning from one of `templates` (default CALL_REASON)."""
    return rng.choice(templates or CALL_REASON).format(i=t["intent"], n=tool["name"], a=reasoning_args(tool, t))


def reasoning_answer(rng, tool, t):
    return rng.choice(["The {n} tool returned the result. I will answer with it.",
                       "I have the result from {n}. Now I can answer the user.",
                       "{n} answered; I report the result."]).format(n=tool["name"])


def call_message(tool, t, reasoning, idx):
    args = json.dumps(dict(zip([p for p, _ in tool["params"]], t["values"])), separators=(",", ":"))
    return {"role": "assistant", "content": "", "reasoning_content": reasoning,
            "tool_calls": [{"id": "call_{}".format(idx), "type": "function",
                            "function": {"name": tool["name"], "arguments": args}}]}


def draw_tools(rng, heldout, n_tools=None):
    n = n_tools or rng.choice([1, 2, 2, 3, 3, 4])
    doms = rng.sample(sorted(DOMAINS), n)
    tools = [draw_schema(rng, d, heldout) for d in doms]
    return tools


def conversation(rng, heldout=False):
    """One training conversation: returns dict(tools=[schema...], messages=[...], thinking)."""
    tools = draw_tools(rng, heldout)
    kind = rng.random()
    thinking = rng.random() < 0.85
    msgs = []
    if rng.random() < 0.15:
        msgs.append({"role": "system", "content": rng.choice(["You are a helpful assistant.",
                                                               "Be concise.", "You help with everyday tasks."])})
    n_calls = 1 if kind < 0.7 else rng.randrange(2, 6)
    if kind > 0.9:
        # plain chat, maybe without any tools at all
        if rng.random() < 0.4:
            tools = []
        n_calls = 0
    ci = 0
    turns = max(1, n_calls + (1 if n_calls == 0 else rng.choice([0, 0, 1])))
    plain_left = turns - n_calls
    calls_left = n_calls
    while calls_left or plain_left:
        do_call = calls_left and (not plain_left or rng.random() < 0.7)
        if do_call:
            tool = rng.choice(tools)
            t = task(rng, tool["domain"])
            msgs.append({"role": "user", "content": t["user"]})
            msgs.append(call_message(tool, t, reasoning_call(rng, tool, t), ci))
            msgs.append({"role": "tool", "tool_call_id": "call_{}".format(ci), "content": json.dumps(t["result"])})
            msgs.append({"role": "assistant", "content": t["answer"], "reasoning_content": reasoning_answer(rng, tool, t)})
            ci += 1
            calls_left -= 1
        else:
            q, a = rng.choice(PLAIN)
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a, "reasoning_content": rng.choice(PLAIN_REASON)})
            plain_left -= 1
    return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=thinking)


# ---------------------------------------------------------------------------------------------
# Evaluation cases: a request (what a client sends) and what a good reply contains.
def eval_case(rng, kind, heldout):
    tools = draw_tools(rng, heldout, rng.choice([2, 3, 3, 4]))
    msgs = []
    if kind == "plain":
        q, _ = rng.choice(HELDOUT_PLAIN + PLAIN[:10])
        if rng.random() < 0.3:
            tools = []
        msgs.append({"role": "user", "content": q})
        return dict(kind=kind, heldout=heldout, request=request(tools, msgs), expect={})
    # a warm-up exchange sometimes, so calls mid-conversation are measured too
    if rng.random() < 0.3:
        tool0 = rng.choice(tools)
        t0 = task(rng, tool0["domain"])
        msgs += [{"role": "user", "content": t0["user"]}, call_message(tool0, t0, reasoning_call(rng, tool0, t0), 9),
                 {"role": "tool", "tool_call_id": "call_9", "content": json.dumps(t0["result"])},
                 {"role": "assistant", "content": t0["answer"], "reasoning_content": reasoning_answer(rng, tool0, t0)}]
    tool = rng.choice(tools)
    t = task(rng, tool["domain"])
    msgs.append({"role": "user", "content": t["user"]})
    if kind == "call":
        return dict(kind=kind, heldout=heldout, request=request(tools, msgs), expect=call_expect(tool, t))
    msgs.append(call_message(tool, t, reasoning_call(rng, tool, t), 0))
    msgs.append({"role": "tool", "tool_call_id": "call_0", "content": json.dumps(t["result"])})
    return dict(kind=kind, heldout=heldout, request=request(tools, msgs), expect={"facts": t["facts"]})


def call_expect(tool, t):
    """What a right call of `tool` for task `t` is: its name and the arguments from the user's words."""
    return {"name": tool["name"], "arguments": dict(zip([p for p, _ in tool["params"]], t["values"]))}


def request(tools, msgs):
    r = {"model": "ds4-tiny-agent", "messages": msgs}
    if tools:
        r["tools"] = [t["schema"] for t in tools]
    return r


def eval_set(seed, n=200):
    """n cases: 60% seen-schema, 40% held-out-schema; per group half need a call, a quarter need a
    final answer from a tool result, a quarter are plain chat."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        heldout = i % 5 >= 3
        k = ["call", "call", "answer", "plain"][(i // 5) % 4]
        cases.append(eval_case(rng, k, heldout))
    return cases


# Schema variants for a diagnosis of the call cases: which part of an unfamiliar schema costs the
# model the call. Every case needs one call, after a single user turn, among 2-4 declared tools
# whose schemas are all drawn one way: "seen" and "heldout" as the evaluation draws them,
# "invented-names" / "invented-both" as the training corpus invents them (draw_schema_v2),
# "heldout-names" (held-out tool names over seen parameter names) and "heldout-params" (seen tool
# names over held-out parameter names). Not part of the 200; make_eval.py --schemas writes them.
SCHEMA_VARIANTS = ("seen", "heldout", "invented-names", "invented-both", "heldout-names", "heldout-params")


def _variant_schema(rng, domain, variant):
    if variant in ("seen", "heldout"):
        return draw_schema(rng, domain, variant == "heldout")
    if variant in ("invented-names", "invented-both"):
        return draw_schema_v2(rng, domain, p_name=1.0, p_params=1.0 if variant == "invented-both" else 0.0)
    held, seen = draw_schema(rng, domain, True), draw_schema(rng, domain, False)
    name_from, params_from = (held, seen) if variant == "heldout-names" else (seen, held)
    fn = dict(params_from["schema"]["function"], name=name_from["name"])
    return dict(domain=domain, name=name_from["name"], params=params_from["params"],
                schema={"type": "function", "function": fn})


def diagnostic_set(seed, n, variant):
    """n call cases whose declared schemas are all drawn as `variant` (SCHEMA_VARIANTS) says."""
    if variant not in SCHEMA_VARIANTS:
        raise ValueError("schema variant %r is none of %s" % (variant, ", ".join(SCHEMA_VARIANTS)))
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        tools = [_variant_schema(rng, d, variant) for d in rng.sample(sorted(DOMAINS), rng.choice([2, 3, 3, 4]))]
        tool = rng.choice(tools)
        t = task(rng, tool["domain"])
        msgs = [{"role": "user", "content": t["user"]}]
        cases.append(dict(kind="call", heldout=variant != "seen", request=request(tools, msgs),
                          expect=call_expect(tool, t)))
    return cases


# ---------------------------------------------------------------------------------------------
# Corpus v2 (the second training stage): the same tasks, drawn so that what the evaluation
# measures is most of the signal. Short conversations (one call and its answer, or a plain reply,
# sometimes after a warm-up exchange; rarely a 3-call session) keep every call inside the raw
# attention window of the tools block; a share of the schemas gets invented tool and parameter
# names, so picking a tool has to come from its description and copying a name from the tools
# block, not from memorised names. Held-out names and parameter names stay out (checked below).
NAME_WORDS = ["alpha", "beta", "delta", "omega", "nova", "orbit", "pixel", "vector", "kite", "maple", "cedar",
              "river", "stone", "ember", "frost", "lumen", "quartz", "sable", "tango", "umbra", "vortex", "willow",
              "zephyr", "comet", "atlas", "bolt", "cobalt", "dune", "echo", "flux", "glyph", "harbor", "iris",
              "jade", "koala", "lotus", "mango", "nimbus", "onyx", "prism", "quill", "raven", "sprout", "tundra"]
NAME_VERBS = ["do", "run", "ask", "pull", "grab", "take", "make", "send", "use", "call", "seek", "probe"]
PARAM_WORDS = ["arg", "value_in", "text", "q", "key", "item", "subject", "payload", "data", "field", "spec",
               "what", "target_value", "input_text", "param", "x", "request", "arg1", "arg2", "arg3", "p1",
               "p2", "p3", "first", "second", "third", "left", "right", "origin", "goal", "a", "b", "c"]
COUNTRIES = [("France", "Paris"), ("Italy", "Rome"), ("Japan", "Tokyo"), ("Spain", "Madrid"),
             ("Portugal", "Lisbon"), ("Austria", "Vienna"), ("Norway", "Oslo"), ("Ireland", "Dublin"),
             ("Peru", "Lima"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Greece", "Athens"),
             ("Poland", "Warsaw"), ("Finland", "Helsinki"), ("Sweden", "Stockholm"), ("Denmark", "Copenhagen"),
             ("Belgium", "Brussels"), ("Cuba", "Havana"), ("Senegal", "Dakar"), ("Ghana", "Accra"),
             ("Turkey", "Ankara"), ("Georgia", "Tbilisi"), ("Latvia", "Riga"), ("Estonia", "Tallinn")]
THINGS = [("cat", "a small furry animal that people often keep as a pet"), ("tree", "a tall plant with a trunk"),
          ("bird", "an animal with feathers that can usually fly"), ("car", "a vehicle with four wheels"),
          ("book", "a set of printed pages bound together"), ("piano", "a musical instrument with keys"),
          ("cloud", "a mass of water droplets floating in the sky"), ("bridge", "a structure that crosses a river"),
          ("horse", "a large animal people ride"), ("laptop", "a portable computer"),
          ("compiler", "a program that turns source code into machine code"), ("planet", "a large body orbiting a star")]
PLAIN_TEMPLATES = ["Hello, {x}!", "Thanks, {x}.", "Good morning, {x}!"]


def _plain_pair(rng):
    """A plain-chat prompt and reply (never one of HELDOUT_PLAIN)."""
    k = rng.random()
    if k < 0.45:
        return rng.choice(PLAIN)
    if k < 0.65:
        country, city = rng.choice(COUNTRIES)
        return ("What is the capital of {}?".format(country), "The capital of {} is {}.".format(country, city))
    if k < 0.8:
        t, d = rng.choice(THINGS)
        art = "an" if t[0] in "aeiou" else "a"
        return (rng.choice(["What is {} {}?", "Explain what {} {} is.", "Tell me about {} {}."]).format(art, t),
                "{} {} is {}.".format(art.capitalize(), t, d))
    if k < 0.9:
        p = rng.choice(PEOPLE)
        return (rng.choice(PLAIN_TEMPLATES).format(x=p), rng.choice(["Hello! How can I help you today?",
                                                                     "You are welcome!", "Hi! What can I do for you?"]))
    city = rng.choice(CITIES)
    return (rng.choice(["Have you ever been to {}?", "Is {} a nice place to live?", "Tell me something about {}."])
            .format(city), "{} is a city many people like to visit.".format(city))


def _invented_name(rng):
    forbidden = heldout_name_set()
    while True:
        parts = [rng.choice(NAME_VERBS + NAME_WORDS), rng.choice(NAME_WORDS)]
        if rng.random() < 0.3:
            parts.append(rng.choice(NAME_WORDS))
        style = rng.randrange(3)
        name = "_".join(parts) if style == 0 else (parts[0] + "".join(p.capitalize() for p in parts[1:]) if style == 1
                                                   else "".join(parts))
        if name not in forbidden:
            return name


def heldout_param_set():
    s = set()
    for d in DOMAINS.values():
        for opts in d["heldout_params"]:
            s.update(opts)
    return s


def draw_schema_v2(rng, domain, p_name=0.4, p_params=0.3):
    """A seen-pool schema whose tool name is invented with probability p_name and whose parameter
    names are invented with probability p_params."""
    tool = draw_schema(rng, domain, False)
    fn = tool["schema"]["function"]
    invent_name = rng.random() < p_name
    invent_params = rng.random() < p_params
    if not (invent_name or invent_params):
        return tool
    name = _invented_name(rng) if invent_name else fn["name"]
    params = tool["params"]
    if invent_params:
        pool = [p for p in PARAM_WORDS if p not in heldout_param_set()]
        params = list(zip(rng.sample(pool, len(params)), [t for _, t in params]))
    old = fn["parameters"]["properties"]
    props = {p: v for (p, _), v in zip(params, old.values())}
    pr = {"type": "object", "properties": props}
    if "required" in fn["parameters"]:
        pr["required"] = [p for p, _ in params]
    nfn = {"name": name, "description": fn["description"], "parameters": pr}
    return dict(domain=domain, name=name, params=params, schema={"type": "function", "function": nfn})


def conversation_v2(rng, p_name=0.4, p_params=0.3, tool_counts=(1, 2, 2, 3, 3, 4), reason=None):
    """One stage-2 training conversation (see the block comment above); p_name and p_params are
    draw_schema_v2's shares of invented tool and parameter names, tool_counts the numbers of
    declared tools drawn from, reason the call's reasoning (default reasoning_call)."""
    reason = reason or reasoning_call
    n = rng.choice(tool_counts)
    tools = [draw_schema_v2(rng, d, p_name, p_params) for d in rng.sample(sorted(DOMAINS), n)]
    thinking = rng.random() < 0.9
    msgs = []
    if rng.random() < 0.1:
        msgs.append({"role": "system", "content": rng.choice(["You are a helpful assistant.",
                                                               "Be concise.", "You help with everyday tasks."])})
    kind = rng.random()
    if kind < 0.28:
        # plain chat: with tools present mostly (the case the model must not call one), sometimes none
        if rng.random() < 0.2:
            tools = []
        for _ in range(rng.choice([1, 1, 2])):
            q, a = _plain_pair(rng)
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a, "reasoning_content": rng.choice(PLAIN_REASON)})
        return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=thinking)
    n_calls = 1 if kind < 0.7 else (2 if kind < 0.93 else 3)
    for ci in range(n_calls):
        if ci and rng.random() < 0.15:
            q, a = _plain_pair(rng)
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a, "reasoning_content": rng.choice(PLAIN_REASON)})
        tool = rng.choice(tools)
        t = task(rng, tool["domain"])
        msgs.append({"role": "user", "content": t["user"]})
        msgs.append(call_message(tool, t, reason(rng, tool, t), ci))
        msgs.append({"role": "tool", "tool_call_id": "call_{}".format(ci), "content": json.dumps(t["result"])})
        msgs.append({"role": "assistant", "content": t["answer"], "reasoning_content": reasoning_answer(rng, tool, t)})
    if rng.random() < 0.1:
        q, a = _plain_pair(rng)
        msgs.append({"role": "user", "content": q})
        msgs.append({"role": "assistant", "content": a, "reasoning_content": rng.choice(PLAIN_REASON)})
    return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=thinking)


# ---------------------------------------------------------------------------------------------
# Corpus v3 (the copy stage): v2's conversations, but in half of them the values the user names
# (cities, ticker symbols, people, paths, events) are invented strings drawn fresh for the
# conversation. Memorised values then cannot lower the loss: only reading the user's words (for
# the call's arguments) and the tool result (for the answer) can, so that is what the gradient
# teaches. Tool names and parameter names follow v2 (held-out ones stay out); the evaluation
# keeps the real value lists.
SYLLABLES = ["ka", "ro", "mi", "ten", "vo", "lin", "sa", "dor", "be", "qua", "zi", "mar", "ul", "fen", "ta",
             "gor", "ni", "pe", "rus", "el", "ko", "van", "shi", "bra", "do", "lem", "tri", "os", "hal", "jun"]
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
EXTS = [".txt", ".md", ".py", ".json", ".csv", ".log", ".toml", ".cpp", ".html", ".sh"]


def _word(rng, n_lo=2, n_hi=3):
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(n_lo, n_hi)))


def random_pools(rng):
    """Fresh invented value lists for one conversation (see the block comment above)."""
    return dict(
        cities=[_word(rng).capitalize() for _ in range(4)],
        symbols=["".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 4))) for _ in range(4)],
        people=[_word(rng, 2, 2).capitalize() for _ in range(4)],
        dirs=["/".join(_word(rng, 1, 2) for _ in range(rng.randint(1, 2))) for _ in range(4)],
        files=[_word(rng, 1, 2) + rng.choice(EXTS) for _ in range(4)],
        events=[rng.choice(["meeting with ", "call with ", "lunch with ", "review of "]) + _word(rng).capitalize()
                for _ in range(4)])


def conversation_v3(rng, p_name=0.4, p_params=0.3, tool_counts=(1, 2, 2, 3, 3, 4), reason=None):
    """One copy-stage conversation: conversation_v2 with invented values half of the time."""
    global task
    if rng.random() >= 0.5:
        return conversation_v2(rng, p_name, p_params, tool_counts, reason)
    pools = random_pools(rng)
    real = task
    task = lambda r, d: real(r, d, pools)  # noqa: E731  (conversation_v2 draws its tasks through `task`)
    try:
        return conversation_v2(rng, p_name, p_params, tool_counts, reason)
    finally:
        task = real


# Corpus v4: v3 plus copy drills (a quarter of the conversations). A drill asks the assistant to
# repeat a short string of invented words, codes and numbers: about half of its targets can only
# be predicted by copying, over a short distance, which is the signal the attention needs to learn
# the look-back-and-copy step (find the current token earlier, emit what followed it) that tool
# names, arguments and quoted results need too. A drill has a tools block like any conversation,
# and no tool call.
DRILL_ASKS = ["Repeat after me: {s}", "Say exactly this: {s}", "Please echo: {s}", "Copy this text: {s}",
              "Repeat: {s}"]
DRILL_REASON = ["The user wants me to repeat {s}. No tool is needed.", "I only have to repeat {s}.",
                "No tool fits; I will repeat {s}."]


def _drill_piece(rng):
    k = rng.random()
    if k < 0.4:
        return _word(rng, 1, 3)
    if k < 0.6:
        return _word(rng).capitalize()
    if k < 0.75:
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 4)))
    if k < 0.9:
        return str(rng.randrange(1, 100000))
    return "/".join(_word(rng, 1, 2) for _ in range(2)) + rng.choice(EXTS)


def copy_drill(rng):
    n = rng.choice([1, 2, 2, 3, 3, 4])
    tools = [draw_schema_v2(rng, d) for d in rng.sample(sorted(DOMAINS), n)]
    msgs = []
    for _ in range(rng.choice([1, 1, 2])):
        s = " ".join(_drill_piece(rng) for _ in range(rng.randint(1, 6)))
        msgs.append({"role": "user", "content": rng.choice(DRILL_ASKS).format(s=s)})
        msgs.append({"role": "assistant", "content": s, "reasoning_content": rng.choice(DRILL_REASON).format(s=s)})
    return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=rng.random() < 0.9)


def conversation_v4(rng):
    """v3 with a quarter copy drills (see above)."""
    return copy_drill(rng) if rng.random() < 0.25 else conversation_v3(rng)


def conversation_v5(rng):
    """v3 with 40 % short copy drills without a tools block: the drills are then ~50 tokens instead
    of ~500, so a step holds ten times as many copies at short distance (a curriculum: copying
    learned over short distances first), while the v3 conversations keep the long-context task."""
    if rng.random() < 0.4:
        c = copy_drill(rng)
        c["tools"] = []
        return c
    return conversation_v3(rng)


def conversation_drills(rng):
    """Only short copy drills without a tools block (~50 tokens each): the first stage of a run from
    scratch, so the attention learns to look back and copy before the long tool conversations
    (v3/v5) are trained on top of it."""
    c = copy_drill(rng)
    c["tools"] = []
    return c


# Corpus v6 (a name stage, tried on 2026-12-01 and not shipped: it did worse on all four scores,
# tools/tinyagent/README.md): a model that copies values still wrote memorised tool names, because
# the seen names are verb/noun combinations per domain (make_name), so a guessed domain-typical name
# lowers the loss almost as much as the copied one. In v6 three quarters of the tool names and
# two thirds of the parameter names are invented (unrelated to the domain), so only reading the
# tools block predicts them, and a fifth of the conversations stay tool-less copy drills.
def conversation_v6(rng):
    """v3 with 75 % invented tool names and 65 % invented parameter names, plus 20 % drills."""
    if rng.random() < 0.2:
        return conversation_drills(rng)
    return conversation_v3(rng, p_name=0.75, p_params=0.65)


# Corpus v7 (a selection stage, continuing the shipped model): v5 with two to five declared tools
# per conversation instead of one to four. With one declared tool the served decoder leaves no
# choice; the calls that fail pick the wrong one of several, so more of the gradient goes to
# choosing the tool whose description fits the request. Names and values as in v3.
def conversation_v7(rng):
    """v5 with 2-5 declared tools per tool conversation (see above)."""
    if rng.random() < 0.4:
        c = copy_drill(rng)
        c["tools"] = []
        return c
    return conversation_v3(rng, tool_counts=(2, 3, 3, 4, 4, 5))


# Corpus v8 (a binding stage, continuing the shipped model): the calls that fail choose the wrong
# one of several declared tools, and they fail as often on invented names from the training
# distribution (51.7 % right) as on the held-out ones: the model answers with names it remembers
# for the domain instead of the name whose description fits. v8 declares 2-5 tools, invents 60 %
# of the tool names and half of the parameter names, and keeps a fifth tool-less copy drills.
# v8d also changes the reasoning: before naming the tool it quotes the tool's description from the
# tools block ("The tool described as "Get the current weather for a city." is kite_flux."), so
# the name is looked up right after an exact copy of the text it belongs to. Both were tried on
# 2026-12-02 and not shipped (tools/tinyagent/README.md, "Which part of a schema costs the call").
def reasoning_call_described(rng, tool, t):
    """Call reasoning that quotes the chosen tool's description before its name (v8d)."""
    if rng.random() < 0.2:
        return reasoning_call(rng, tool, t)
    args = reasoning_args(tool, t)
    desc = tool["schema"]["function"]["description"]
    return rng.choice(["The user wants {i}. The tool described as \"{d}\" is {n}. I will call {n} with {a}.",
                       "The user asks for {i}. \"{d}\" is what {n} does, so I call {n} with {a}."]).format(
                           i=t["intent"], d=desc, n=tool["name"], a=args)


def conversation_v8(rng, reason=None):
    """v3 with 2-5 declared tools, 60 % invented tool names, 50 % invented parameter names, 20 %
    tool-less drills (see above)."""
    if rng.random() < 0.2:
        return conversation_drills(rng)
    return conversation_v3(rng, p_name=0.6, p_params=0.5, tool_counts=(2, 3, 3, 4, 4, 5), reason=reason)


def conversation_v8d(rng):
    """v8 whose call reasoning quotes the tool's description before its name (see above)."""
    return conversation_v8(rng, reason=reasoning_call_described)


# Corpus v9 (a lookup stage, continuing the shipped model): the binding a call needs is "the tool
# whose description fits the request -> its name", and in a conversation it is trained once per
# call, beside ~500 tokens of everything else. A lookup drill asks it many times over one tools
# block: 3-6 declared tools (80 % invented names, half invented parameter names), then 4-8 turns of
# "Which tool fits this request: <a request>" answered by the tool's name alone, reasoning "The user
# wants <intent>. The tool for that is <name>." An invented name cannot be remembered, so only
# reading the tools block (the name before the description that fits) lowers these targets' loss.
# v9 is v8 with 40 % lookup drills.
LOOKUP_ASKS = ["Which tool fits this request: {u}", "Which of your tools would you use for this? {u}",
               "Name the tool for: {u}", "Tool for this request? {u}"]
LOOKUP_REASON = ["The user wants {i}. The tool for that is {n}.", "This is about {i}, so the tool is {n}.",
                 "For {i}, the tool is {n}."]


def lookup_drill(rng, p_name=0.8, reasons=None):
    """One lookup drill (see above): a tools block and 4-8 request -> tool-name turns; `reasons`
    the reasoning templates (default LOOKUP_REASON)."""
    n = rng.choice([3, 4, 4, 5, 5, 6])
    tools = [draw_schema_v2(rng, d, p_name=p_name, p_params=0.5) for d in rng.sample(sorted(DOMAINS), n)]
    msgs = []
    for _ in range(rng.randint(4, 8)):
        tool = rng.choice(tools)
        t = task(rng, tool["domain"])
        msgs.append({"role": "user", "content": rng.choice(LOOKUP_ASKS).format(u=t["user"])})
        msgs.append({"role": "assistant", "content": tool["name"],
                     "reasoning_content": rng.choice(reasons or LOOKUP_REASON).format(i=t["intent"], n=tool["name"])})
    return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=rng.random() < 0.9)


def conversation_v9(rng):
    """v8 with 40 % lookup drills (see above)."""
    return lookup_drill(rng) if rng.random() < 0.4 else conversation_v8(rng)


# Stage A with lookups (a first stage from scratch, tried 2026-12-02): lookup drills from the
# shipped weights stayed at chance on invented names (tools/tinyagent/README.md), because by then
# the model picks tools by names it remembers for the domain. Here the lookup is trained from the
# first step, with every name invented, beside the copy drills that taught copying in stage A.
def conversation_drills_lookup(rng):
    """Half tool-less copy drills, half lookup drills whose tool names are all invented."""
    return conversation_drills(rng) if rng.random() < 0.5 else lookup_drill(rng, p_name=1.0)


# Quoted names and a wider model (a first stage from scratch, tried 2026-12-03). Two findings
# behind it. The byte-level BPE splits a word after a space apart from the same word after a quote
# (GPT-2 pre-tokenization: " kitemaple" is one letter run with its space, "\"kitemaple\"" is a quote
# and a bare letter run): the tools block writes `"name":"kitemaple"` and DSML writes
# `invoke name="kitemaple"` with the bare tokens, but reasoning that says "the kitemaple tool"
# writes space-prefixed ones, so naming an unfamiliar tool in the reasoning was never a copy of
# the tools block and the DSML name was never a copy of the reasoning. The `_q` forms quote every
# tool name the reasoning writes, so both steps are exact token copies. And the shipped model has
# two attention heads per block over one shared KV row: copying (find the current token earlier,
# emit what followed) and the lookup (gather the name into its description, match the request to
# the description) compete for four attention patterns in the two raw-window blocks; `train.py
# --heads` widens the query side (the KV row stays one, as in DS4).
LOOKUP_REASON_Q = ["The user wants {i}. The tool for that is \"{n}\".", "This is about {i}, so the tool is \"{n}\".",
                   "For {i}, the tool is \"{n}\"."]


def lookup_drill_q(rng, p_name=0.8):
    """lookup_drill whose reasoning quotes the tool's name (see above); the answer is the bare name."""
    return lookup_drill(rng, p_name, LOOKUP_REASON_Q)


CALL_REASON_Q = ["The user wants {i}. The tool \"{n}\" fits. I will call \"{n}\" with {a}.",
                 "The user asks for {i}. I should call \"{n}\" with {a}.",
                 "To get {i} I use \"{n}\" with {a}."]


def reasoning_call_q(rng, tool, t):
    """reasoning_call with the tool's name quoted (see above)."""
    return reasoning_call(rng, tool, t, CALL_REASON_Q)


def conversation_drills_lookup_q(rng):
    """Half tool-less copy drills, half quoted-name lookup drills with all names invented."""
    return conversation_drills(rng) if rng.random() < 0.5 else lookup_drill_q(rng, p_name=1.0)


def conversation_v10q(rng):
    """The tool stage after drills-lookup-q: a quarter tool-less copy drills, a quarter quoted-name
    lookup drills (80 % invented names), half v3 conversations with 1-5 declared tools, half of the
    tool names and 40 % of the parameter names invented, and quoted names in the call reasoning."""
    k = rng.random()
    if k < 0.25:
        return conversation_drills(rng)
    if k < 0.5:
        return lookup_drill_q(rng)
    return conversation_v3(rng, p_name=0.5, p_params=0.4, tool_counts=(1, 2, 3, 3, 4, 5), reason=reasoning_call_q)


def conversation_v5q(rng):
    """v5 (the shipped stage B) with the tool's name quoted in the call reasoning: the control for
    v10q's lookup drills."""
    if rng.random() < 0.4:
        return conversation_drills(rng)
    return conversation_v3(rng, reason=reasoning_call_q)


# Dense lookup drills (a first stage from scratch, tried 2026-12-04). The earlier lookup drills
# spent ~900 tokens (the tools head, 3-6 tools, reasoning) on 4-8 lookups, and a request could
# repeat an earlier one of the same drill, whose answer it could then copy without reading the
# tools block. Here: no reasoning, each asked tool asked once, and one tool never asked (so the
# last answer cannot be had by elimination either): every answer is a lookup of an invented name.
def lookup_dense(rng):
    """A tools block of 3-6 tools with invented names (half with invented parameter names), then
    one "which tool" turn for each tool but one, in random order, answered by the bare name."""
    n = rng.choice([3, 4, 5, 6])
    tools = [draw_schema_v2(rng, d, p_name=1.0, p_params=0.5) for d in rng.sample(sorted(DOMAINS), n)]
    msgs = []
    for tool in rng.sample(tools, n - 1):
        t = task(rng, tool["domain"])
        msgs.append({"role": "user", "content": rng.choice(LOOKUP_ASKS).format(u=t["user"])})
        msgs.append({"role": "assistant", "content": tool["name"]})
    return dict(tools=[t["schema"] for t in tools], messages=msgs, thinking=False)


def conversation_lookup_dense(rng):
    """A quarter tool-less copy drills (stage A's), three quarters dense lookup drills."""
    return conversation_drills(rng) if rng.random() < 0.25 else lookup_dense(rng)
