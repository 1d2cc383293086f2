"""Broader cues of the extractive engine: durable knowledge said without "always", "never" or "I prefer".

Real users rarely use the marker words the first rules of
:mod:`worker.providers.extractive` look for. These rules catch the other
ways a durable item is said, each a pattern of English phrasing, never a
list of topics. They run only on a sentence the first rules dropped, after
the same drop rules (questions, one-off and status markers, pasted text), so
they can only add notes. Each returns the note type or ``None``:

``context``     a statement the user flags as something to keep: "keep in
                mind …", "for context, …", "note that …", "it's important …".
``identity``    what the project is: "this is (really just) a/my/our <thing>",
                "I'm building a …", "I'm building X — a …", "I want to build a
                <thing> that …" (a thing noun: "a feature that …", "my app.js
                file" are not). "Set up/initialize a … for a … called …" is a
                request for work and "the goal is …" a plan: neither is kept.
``stack``       what it is built with: "we will be using X", "I want to use X",
                "we're using X" (X a named tool, not "the same" or a pronoun).
``layout``      where things are: "X is (located) in <file or folder>", "my
                X should be in …", "X is called <name>", "keep X in the Y
                folder" ("put X inside …" asks for the work), "Logo
                location: ~/app/logo/" (not a log's "Syncing repository:
                owner/name").
``directive``   a standing rule without a marker word: "X should be done
                once in one place", "X should always …", "we should
                keep/follow …", "we shouldn't …", a short "use <tool>",
                "<in context>, do not … ever" (not "do not return/display …", what
                the program does), "I will commit/deploy …
                manually/myself", a recurring moment with an order for the
                assistant ("after each file, stop and wait for my review",
                "each time you …"). "Make sure / ensure (that) all …" is
                the acceptance test of the work at hand far more often than
                a rule, and keeps nothing, as do "every/each X should/must
                …", "in/for each X, <verb> …", "follow <a style, case or
                convention> …" and "we should have/use …", which on dev and
                the audit pools specified the work in 11 of 13 notes (ADR
                0024); nor does a recurring moment in a description of the
                feature ("after each tick, the value … increases").
``command``     how the project is run or meant: "run `x` to see …", "is
                intentionally small", "that's the official extension".
``origin``      what the project is, by what it was or is not: "we migrated
                from X to Y", "this is not a demo".
``person``      who the user is: "I'm a data engineer", "I'm new to Rust",
                "I'm learning", "I have some experience with X", "I'm from
                …", "my editor is …".
``pointer``     where the project's own documents are: "the architecture is
                in docs/ARCHITECTURE.md", "see CONTRIBUTING.md for …", a
                labelled docs or resource URL.

A group stays only while it fires on more than one dev file (ADR 0008), and
only while its notes hold on owners no rule was written from (ADR 0024): the
*complaint* group (a preference said as a feeling: "it's weird design", "I
don't want the spinner", "I only want one object") was removed when it was
measured again under ADR 0024's labels: of its 20 notes on dev and the two
audit pools, 3 were right, the rest feedback on the edit at hand ("I don't want
it to have a default"). The
*hosting* ("hosted at <domain>"), *record* ("put this in the contributor
guide"), *tooling* ("that flag was renamed") and *habit* ("no need to ask",
"keep your answers short") groups each fired on one dev file or none and
were removed, with the candidates tried for them (bench/README.md, "How the rules were grown").
Any cued sentence that points at content of the moment ("the following",
"below", "above", "attached", "this error", "step 2", a deictic "here", a
closing colon that introduces what follows) is a task, whatever its form;
so is one that reports a problem or hides a request ("nothing happens",
"doesn't load", "broken", "keeps freezing", "crashes", "stuck", "why", "can
you …", "can we …", "…, put it back"),
one that says what holds now ("now", "currently") or what the user just did
("I edited … manually", "I just added …": progress), and a
*layout* sentence about where a problem, a pronoun or "the new" thing is
("the bug is in app.js", "it is in src/"). A description of the feature being
built ("each feature should …", "users can …", what a thing of the product
"should" do or be with no person in the clause's subject: "the result from
each engine should include …", "the pop-up should appear", "config should be
defined in config.py", also after a lead-in such as "keep in mind") is the
work, not a fact; "we should …", "you should …", "my routes should …", "X
should always …" and "X should be done once in one place" stay rules.

Type: a sentence about the user's own setup or taste ("I", "my") is
``user``; one that tells the assistant how to work (imperative, "you") is
``feedback``; anything about the project is ``project``.
"""

from __future__ import annotations

import re

from cairn.protocol.vocab import NoteType

# patterns are matched against the lower-cased sentence, so they need no re.I (and run faster)
_X = re.X

CONTEXT = re.compile(
    r"""\b(?:keep\ in\ mind|bear\ in\ mind|for\ context|for\ (?:your\ )?reference|note\ that|fyi
    |it'?s\ (?:very\ |really\ |super\ )?important|it\ is\ (?:very\ |really\ )?important|important:)\b""",
    _X,
)
_THING = (
    r"(?:project|app|application|library|lib|tool|service|site|website|web\ ?app|game|bot|cli|kb|knowledge\ base"
    r"|repo|repository|plugin|extension|firmware|script|dashboard|api|backend|frontend|monorepo|package|prototype"
    r"|platform|product|engine|framework|sdk|server|template|theme|variant|clone|poc|mvp|homework|assignment"
    r"|take[\ -]home\ project|side\ project|hobby\ project|blog|course|crate|module|daemon|pipeline|workspace)"
)
IDENTITY = re.compile(
    rf"""(?:^|\b(?:so|and|but|because|since|as)\ )
    (?:(?:this|it)\ (?:is|'s|will\ be)\ (?:(?:really|just|basically|actually|simply|only|going\ to\ be)\ )*
        (?:a|an|my|our|the)\ (?:[\w-]+\ ){{0,4}}?{_THING}\b
      |(?:i'?m|i\ am|we'?re|we\ are)\ (?:building|making|writing|developing|creating|working\ on)\ (?:(?:a|an|my|our)\ \S|[\w-]+\ (?:—|–|-|,)\ (?:a|an)\ )
      |(?:i|we)\ (?:want|need|would\ like|'d\ like)\ to\ (?:make|build|create|write|develop)\ (?:a|an)\ (?:[\w-]+\ ){{0,3}}{_THING}\ (?:that|which|where|for|with|called|named)\b
      )
    (?!\.\w|[\ -](?:files?|responses?|requests?|calls?|keys?|errors?|code|pages?|routes?|folders?|director(?:y|ies)
      |components?|functions?|methods?|class(?:es)?|tests?|outputs?|logs?)\b)""",
    _X,
)
STACK = re.compile(
    r"""\b(?:we(?:'ll|\ will)\ be\ using|we'?re\ using|we\ are\ using|we(?:'ll|\ will)\ use
    |(?:i|we)\ (?:want|need|would\ like|'d\ like)\ to\ use|i'?m\ using|i\ am\ using)
    \ (?!(?:the\ )?(?:same|wrong|old|new|right|correct|other|different|previous|latest|current)\b
      |(?:it|this|that|them|these|those|another|a\ different)\b)[`@]?[a-z][\w.+/-]*""",
    _X,
)
LAYOUT = re.compile(
    r"""\b(?:is|are|should\ be|must\ be|lives?|sits?)\ (?:located\ |stored\ |kept\ |defined\ |placed\ )?(?:in|inside|under)\ (?:the\ )?@?(?![/~]|(?:that|this|which|what|each|every)\b)[\w./-]*[\w-]+(?:\.\w{1,5}|/|\ (?:folder|directory|dir)\b)
    |\b(?:is|are)\ (?:called|named)\ [`"']?[\w.-]+\.\w{1,5}\b
    |\bshould\ be\ (?:accessible|available|exposed|named|called|registered)\ as\b
    |^(?![a-z]+ing\b)[\w\ ]{1,30}\ (?:location|path|dir(?:ectory)?|folder|repo(?:sitory)?):\ [~.]?[\w.-]*/
    |\benv(?:ironment)?\ (?:var(?:iable)?\ )?[a-z][a-z0-9]*_[a-z0-9_]+\b
    |^(?:put|place|keep|move)\ (?:the\ )?[\w\ -]{1,40}\ (?:in|inside|into|under|to)\ (?:a\ |the\ )?[\w./-]+\ (?:folder|directory|dir)\b""",
    _X,
)
DIRECTIVE = re.compile(
    r"""\bshould\ be\ (?:done|kept|defined|handled|written)\ (?:once|only\ once|in\ (?:one|a\ single)\ place)
    |(?:^|,\ )we\ (?:should|must|need\ to)\ (?:keep|follow|stick|always|never)\b(?!\ the\ new\b)
    |^we\ (?:shouldn'?t|should\ not|must\ not|mustn'?t)\ \S+(?:\ (?!it\b|this\b|that\b|them\b)\S|\W*$)
    |\b(?:is|are|'re|be|gets?)\ always\b|\balways\ (?:be|get|stay|remain)\b
    |\bwe\ need\ [^,;]{3,60},\ not\ \w
    |^[a-z]+\ [^,;]{1,50}\ rather\ than\ \w+ing\b
    |\b(?:at\ the\ end\ of|in|after)\ (?:each|every)\ (?:response|reply|answer|message)\b
    |^(?:periodically|regularly|routinely)\b
    |\buse\ (?!(?:a\ |an\ |the\ )?(?:better|clearer|cleaner|nicer|simpler|more|less|different|another|proper
      |appropriate|correct|right|good|meaningful|descriptive)\b)[^,;]{1,40}?\ (?:instead\ of|rather\ than)\b
    |^use\ [`'"]?[\w.+-]+(?:\ [\w.+-]+)?[`'"]?\.?$
    |^(?:in|for|on|with|when)\ [^,]{1,40},\ (?:do\ not|don'?t|never)\ (?!(?:return|display|show|render|log|emit|send)\b)\w+.*\bever\b
    |\bi(?:'ll|\ will)\ (?:commit|push|deploy|merge|run\ the\ tests|test)\ (?:it\ |this\ |them\ )?(?:manually|myself)\b""",
    _X,
)
# a habit tied to a recurring moment ("after each file, stop and wait for my review", "each time you …") is a
# rule when it tells the assistant what to do: "you", or an imperative after the trigger; "after each tick,
# the value … increases", "whenever I rename a file, I want it to update …" describe the feature being built
TRIGGER = re.compile(
    r"\b(?:after|before)\ (?:each|every)\ (?!step\b|phase\b|stage\b)\w+|\b(?:whenever|every\ time|each\ time)\b", _X
)
_IMPERATIVE = re.compile(
    r"""(?:^|,\ |;\ |\bthen\ )(?:please\ )?(?:always\ )?(?:run|re-?run|commit|push|stop|pause|wait|ask|check|verify
    |confirm|update|write|add|test|lint|format|rebuild|restart|save|log|tell|show|remind|summari[sz]e|document|record
    |use|keep|give|let\ me\ know|make\ sure)\b""",
    _X,
)
COMMAND = re.compile(
    r"""\brun\ [`'"][^`'"]{2,60}[`'"]\ to\ (?:see|run|check|get|show)\b
    |\b(?:is|are)\ (?:intentionally|deliberately|on\ purpose)\b
    |\b(?:that'?s|it'?s|is)\ the\ (?:official|standard|recommended|canonical)\ \w+""",
    _X,
)
# --- groups by kind of statement, not by any one transcript's wording
PERSON = re.compile(
    r"""^(?:i'?m|i\ am)\ (?:a|an)\ (?:[\w-]+\ ){0,2}?(?:developer|engineer|programmer|designer|student|beginner|novice
        |newbie|founder|researcher|scientist|analyst|teacher|freelancer|consultant|hobbyist|maintainer|dev)\b
    |^(?:i'?m|i\ am)\ (?:(?:very|quite|fairly|pretty|not\ (?:very|that))\ )?(?:new|familiar|unfamiliar|comfortable
        |experienced|inexperienced|fluent)\ (?:to|with|in)\ \S
    |^(?:i'?m|i\ am)\ (?:from|based\ in|located\ in)\ [a-z]
    |^(?:i'?m|i\ am)\ [a-z]{3,}(?:an|ese|ish|ian)(?:,|\ and\b|$)
    |^i\ (?:know|understand|speak|write)\ (?:[\w-]+\ ){1,5}?(?:well|deeply|fluently|natively)\b
    |^my\ (?:background|native\ language|first\ language|time\ ?zone|os|operating\ system|editor|ide|shell|machine
        |laptop|setup)\ (?:is|are)\ \S
    |^i\ (?:come\ from|have)\ (?:a|an)\ (?:[\w-]+\ ){0,3}background\b
    |^(?:since\ |as\ |because\ )?(?:i'?m|i\ am)\ (?:still\ |just\ )?learning\b
    |^i\ (?:have|'ve)\ (?:done\ |had\ )?(?:some|a\ little|little|no|lots\ of|a\ lot\ of|years\ of)\ (?:work|experience)\ (?:with|in)\ \S""",
    _X,
)
DOC_POINTER = re.compile(
    r"""\b(?:context|spec(?:ification)?s?|requirements?|instructions?|guidelines?|rules|design|architecture|conventions?
        |documentation|docs)\b[^.;]{0,40}?\b(?:is\ in|are\ in|in|from|at|see)\ (?:the\ |this\ |our\ )?[`'"@]?[\w./-]*[\w-]+
        \.(?:md|mdc|txt|rst|pdf|org)\b
    |^(?:see|refer\ to)\ [`'"@]?[\w./-]+\.(?:md|mdc|rst|txt)\b[`'"]?\ (?:for|about)\b
    |\b(?:resource|docs|documentation|guide|reference|tutorial)\ (?:for|on|about)\ [\w\ .'-]{2,60}:\ ?@?https?://
    |^(?:the\ )?(?:[\w-]+\ )?(?:docs|documentation|api\ reference|reference)\ (?:for\ [\w.\ -]{1,30}\ )?(?:is|are|lives?)?\ ?
        (?:at|here)?:?\ ?https?://""",
    _X,
)
# text that points at content of the moment (pasted below, shown above, attached) is a task, whatever its form
_OF_THE_MOMENT = re.compile(
    r"""\b(?:the\ following|as\ follows|below|above|attached|this\ (?:error|output|log|screenshot|code|snippet|diff)
    |these\ (?:errors|changes|files|steps)|step\ \d|phase\ \d)\b
    |(?<!^)\bhere\b(?!\ is\b)|:\s*$""",
    _X,
)
# a bug report or a request hidden in a statement: "whenever I click it nothing happens", "the config is in
# config.yaml, can you read it", "it was removed, put it back", "it is always disabled, why"
_REPORT = re.compile(
    r"""\b(?:can|could|would)\ you\b|\b(?:can|could|shall)\ we\b|\btell\ me\b|\bwhy\b|\bwhat'?s\ wrong\b|\bwrong\b
    |\bnothing\ (?:happens|works|shows)|\bi\ (?:get|see|got|saw)\b|\bit\ (?:shows|says|throws|returns)\b
    |\b(?:doesn'?t|does\ not|won'?t|isn'?t|is\ not)\ (?:work|load|show|appear|render|update|display|run)\w*
    |\bnot\ (?:working|showing|loading|rendering|displaying)\b|\b(?:broken|failing|fails|failed|blank)\b
    |\b(?:freez(?:e|es|ing)|froze|hang(?:s|ing)?|hung|crash(?:es|ed|ing)?|stuck|lag(?:s|gy|ging))\b
    |,\s+(?:and\ )?(?:please\ )?(?:put|cut|fix|remove|change|make|move|revert|undo|check|bring)\ (?:it|this|that|them)\b""",
    _X,
)
# what the project is, said by what it was or is not: "we migrated from X to Y", "this is not a demo"
ORIGIN = re.compile(
    r"""^we\ (?:have\ )?(?:migrated|moved|switched|ported|converted)\ (?:\w+\ ){0,3}?from\ [^,;]{2,60}?\ to\ \S
    |^(?:this|it)\ (?:is|'s)\ not\ a\ (?:\w+\ )?(?:demo|prototype|toy|poc|proof\ of\ concept|mock-?up|throwaway)\b""",
    _X,
)
# where a *problem* is, or where "it" is, is no fact of the project's layout; nor is where a new thing goes, or
# a request to create or delete one ("Create a new folder: dist/dags/")
_NOT_A_PLACE = re.compile(
    r"""^(?:(?:the|this|that|my|a|an)\ )?(?:it|this|that|they|problem|issue|bug|error|mistake|typo|crash|fix|difference
    |change)\b|\bbut\ (?:never|not|it)\b|\bthe\ new\b|^(?:create|add|make|generate|delete|remove|rename)\b""",
    _X,
)
_NOW = re.compile(r"\b(?:now|currently|at\ the\ moment|right\ now|for\ now)\b")
_FIRST_PERSON = re.compile(r"\b(?:i|i'?m|i'?ve|i'?d|me|my|myself)\b")
_YOU = re.compile(r"\b(?:you|your)\b")
# longer sentences are pasted text or task descriptions; none of these cues needs more
MAX_CUED = 400
_TASKISH = re.compile(
    r"""^(?:how|what|why|where|which|who|can|could|would|will|should|do|does|did|is|are|am)\b
    |^when\ (?:is|are|do|does|did|will|can|should|would|could)\b
    |^(?:suggest|explain|tell\ me|describe|show\ me|summari[sz]e|list)\b|\b(?:fix|debug)\ (?:this|it|the)\b|\b(?:error|traceback|exception|crash(?:es|ed)?)\b""",
    _X,
)


# what a thing of the product "should" do or be, with no person in the subject ("the result from each engine
# should include …", "the login pop-up should appear", "config should be defined in config.py", "each source
# should be accessible as engine `tavily`"), specifies the work; "we should …", "you should …", "my routes should
# …" are rules of the people working on it, and "X should always/never …" and "X should be done once in one
# place" rules of the code. Quoted names are not people: "accessible as engine `you`".
_SHOULD = re.compile(r"\bshould(?:n'?t)?\b")
_SHOULD_RULE = re.compile(
    r"\ (?:not\ )?(?:always|never)\b|\ be\ (?:done|kept|defined|handled|written)\ (?:once|only\ once|in\ (?:one|a\ single)\ place)"
)
_PERSON_WORD = re.compile(r"\b(?:i|i'm|me|my|we|we're|us|our|you|your)\b")
_CLAUSE = re.compile(r"[,;:]\s|\s[—–-]\s")  # "whenever I click …, the pop-up should …": its subject is the pop-up
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”|(?<!\w)'[^']*'(?!\w)")


def _specifies(s: str) -> bool:
    """Does ``s`` say what a thing of the product should do or be, with no person in the subject?"""
    m = _SHOULD.search(s)
    if m is None or _SHOULD_RULE.match(s, m.end()):  # match() anchors at the position: no "^"
        return False
    subject = _CLAUSE.split(_QUOTED.sub(" ", s[: m.start()]))[-1]  # the clause "should" closes
    return _PERSON_WORD.search(subject) is None


# a description of the feature being built (what it shows, what a user can do) is the work, not a fact that
# outlives it: "Each feature should have its own section", "the user can upload a video and …"
_FEATURE = re.compile(
    r"""\b(?:each|every|this|that|the|a|new)\ feature\b|\busers?\ (?:can|should|will|must|clicks?|sees?|gets?)\b
    |\bi\ need\ to\b""",
    _X,
)


# progress: what the user just did ("I edited stock_tracker.py manually to …", "I just added a chicken.png")
_DONE = re.compile(
    r"""\bi(?:'ve|\ have)?\ (?:just\ |already\ |now\ )?(?:edited|changed|added|fixed|updated|removed|created|renamed
    |moved|deleted|ran|installed|tried|pushed|committed|merged|deployed|uploaded|reverted)\b""",
    _X,
)


def _person(s: str, default: NoteType) -> NoteType:
    if _YOU.search(s):
        return NoteType.FEEDBACK
    if _FIRST_PERSON.search(s) and default is NoteType.USER:
        return NoteType.USER
    return default


# Words without which a group cannot match: a substring search is far cheaper
# than the group's regular expression, and most sentences contain none of them.
_NEEDS: dict[str, tuple[str, ...]] = {
    "directive": ("each", "every", "should", "we ", "rather than", "always", "periodically", "regularly", "routinely",
                  "whenever", "use", "manually", "myself", "ever"),
    "context": ("mind", "context", "reference", "note that", "fyi", "important"),
    "identity": ("this is", "this will", "this's", "it is", "it's", "it will", "i'm ", "i am ", "we're", "we are",
                 "want to", "need to", "like to", "set up", "creat", "scaffold", "bootstrap", "start", "init", "build",
                 "goal", "idea", "purpose", "point"),
    "stack": ("using", "to use", "will use", "'ll use"),
    "layout": ("is in", "are in", "be in", "lives in", "live in", "sits in", "sit in", "located", "stored", "kept",
               "defined", "placed", "inside", "is under", "are under", "be under", "lives under", "called", "named",
               "put ", "place ", "keep ", "move ", "accessible as", "available as", "exposed as", "registered as",
               "location:", "path:", "dir:", "directory:", "folder:", "repo:", "repository:", "env"),
    "command": ("run ", "official", "standard", "recommended", "canonical", "intentional", "deliberate", "on purpose"),
    "origin": ("migrated", "moved", "switched", "ported", "converted", "not a"),
    "person": ("i'm", "i am", "i know", "i understand", "i speak", "i write", "my ", "i come", "i have", "i've"),
    "pointer": ("http", ".md", ".mdc", ".txt", ".rst", ".pdf", ".org"),
}
_NEEDED = {group: re.compile("|".join(re.escape(word) for word in words)) for group, words in _NEEDS.items()}


def _may(group: str, s: str) -> bool:
    return _NEEDED[group].search(s) is not None


def _kind(s: str, original: str) -> NoteType | None:
    if _may("directive", s) and (
        DIRECTIVE.search(s) or (TRIGGER.search(s) and (_YOU.search(s) or _IMPERATIVE.search(s)))
    ):
        return NoteType.FEEDBACK if _YOU.search(s) or not re.match(r"(?:we|each|every|all|any|no)\b", s) else NoteType.PROJECT
    if _may("origin", s) and ORIGIN.search(s):
        return NoteType.PROJECT
    if _may("person", s) and PERSON.search(s):
        return NoteType.USER
    if _may("pointer", s) and DOC_POINTER.search(s):
        return NoteType.REFERENCE
    if _may("context", original) and CONTEXT.search(original):
        own = _FIRST_PERSON.search(s) and not re.search(r"\b(?:we|our)\b", s)
        return _person(s, NoteType.USER if own else NoteType.PROJECT)
    if (
        (_may("identity", s) and IDENTITY.search(s) and (len(s.split()) >= 7 or re.search(r"\b(?:called|named)\b", s)))
        or (_may("stack", s) and STACK.search(s) and not _NOW.search(s))
        or (_may("layout", s) and LAYOUT.search(s) and not _NOT_A_PLACE.search(s))
        or (_may("command", s) and COMMAND.search(s))
    ):
        return NoteType.PROJECT
    return None


def reported(s: str) -> bool:
    """Does ``s`` report a problem or hide a request ("…, can you …", "nothing happens", "why")?"""
    return _REPORT.search(s.lower()) is not None


def broad(s: str, original: str) -> NoteType | None:
    """The type of a durable item ``s`` states in one of the broader ways, or ``None``.

    ``s`` has its lead-in and "please" removed and passed the drop rules;
    ``original`` is the sentence as written (a lead-in such as "keep in mind"
    is itself the cue).
    """
    if len(s) > MAX_CUED:
        return None
    s = s.lower()
    kind = _kind(s, original.lower())
    # the task and question guard runs last: few sentences get this far
    if (
        kind is None or _TASKISH.search(s) or _OF_THE_MOMENT.search(s) or _REPORT.search(s) or _FEATURE.search(s)
        or _NOW.search(s) or _DONE.search(s) or _specifies(s)
    ):
        return None
    return kind
