"""What is never a secret: placeholders, references, hashes, ids, public keys and prose.

A false positive on the write path destroys text the user wanted kept (D14 masks in
place), so the generic rules ask these questions of every value before masking it. The
answers are decided by the value's *shape*, not by a list of known examples: a value made
of lower-case words joined by ``_``, ``-`` or spaces, with no digits, reads as prose
("remember_to_rotate_keys_monthly"), a dotted identifier reads as a reference
(``settings.OAUTH_CLIENT_SECRET``), a call as code (``get_random_secret_key()``).

Words are prose only where the syntax leaves it open. Where it says "this is the value"
(``DB_PASSWORD=blueberry``, ``password: "correct horse battery staple"``, ``--password
letmein``, a URL's password, a line of an INI section or a YAML mapping) a password made of
words is still a password — people choose them (passphrases, Diceware, ``letmein``) —
unless its words describe or stand for a value (``required``, ``prompt``, ``see the
vault``): ``word_password`` decides that part, and takes a Capitalised word only from an
environment variable (``DB_PASSWORD=Blueberry``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

from openmemex.lazyre import LazyPattern
from openmemex.redact.masking import is_masked

# Values that stand for a secret instead of being one.
PLACEHOLDER_WORDS = frozenset(
    """
    changeme change_me change-me changeit redacted placeholder example examples sample dummy
    secret secrets password passwd pass pwd passphrase token tokens apikey api_key api-key key
    none null nil undefined true false yes no on off todo tbd fixme required optional hidden
    empty unset default string str value values mysecret mypassword mytoken foo bar baz foobar
    qux test testing admin root guest user username postgres mysql xxx
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
_PLACEHOLDER = LazyPattern(  # this and _NOT_SECRET compile on first use (lazyre), not at every import (1 ms each)
    r"""(?ix)
      <.*                              # <YOUR_KEY>, <password>
    | \$\{.* | \$\{\{.* | \$\(.*      # ${DB_PASSWORD}, ${{ secrets.X }}, $(cat file)
    | \$(?-i:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\}?   # $DB_PASSWORD, $password
    | \{\{.* | \{%.* | \{[A-Za-z_0-9.]*\}.* | \{[A-Za-z_].*  # {{ secret }}, {password}, f"{signature…}"
    | %\(?[A-Za-z_]*\)?[sdvr]         # %s, %(password)s
    | %[A-Za-z_][A-Za-z0-9_]*%        # %PASSWORD%
    | [*xX•·.…_#-]+                   # ****, xxxx, ..., ———
    | \[redacted\] | \(redacted\) | .*\*\*\*.*
    | (?:your|my)[ _-]?[a-z_ -]*(?:key|token|secret|password|pass|pwd)[a-z_ -]*  # YOUR_API_KEY
    | .*(?:_here|-here|here>|goes[ _-]here|placeholder|example|redacted|changeme).*
    """
)

# Things that are references to a secret kept elsewhere, in code.
_REFERENCE_ROOTS = (
    "os.", "process.", "env.", "ENV[", "env[", "self.", "this.", "config.", "settings.", "secrets.",
    "vars.", "inputs.", "params.", "args.", "opts.", "options.", "props.", "import.meta.", "System.",
    "var.", "local.", "module.", "data.", "context.", "ctx.", "cfg.", "conf.", "app.", "Deno.env",
)  # fmt: skip
_DOTTED = re.compile(r"[A-Za-z_$][\w$]{0,24}(?:\.[A-Za-z_$][\w$]*)+")  # a 30-letter "name" is a token
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_CALL = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*[ \t]*[(\[]")  # get_key(, env[
_DEFAULT_ARG = re.compile(r"[A-Za-z_][\w.\[\]]*=(?:None|null|nil|undefined|true|false|True|False)")  # Token=None
_MEMBER = re.compile(r"\$?[A-Za-z_]\w*(?:(?:->|::)[A-Za-z_]\w*)+")  # $this->secret, Config::KEY

# Shapes that are identifiers, digests or ordinary data, never credentials.
_UUID = re.compile(r"\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?")
_NOT_SECRET = LazyPattern(
    r"""(?ix)
      (?-i:[0-7][0-9A-HJKMNP-TV-Z]{25})                              # ULID (upper case, as generated)
    | (?:sha(?:1|224|256|384|512)|md5|blake2b?)[:-][A-Za-z0-9+/=_-]+  # sha256:…, sha512-… (lockfiles)
    | h1:[A-Za-z0-9+/]{40,}={0,2}                                    # go.sum
    | v?\d+(?:\.\d+)+(?:[-+][\w.]+)?                                 # versions
    | [+-]?\d+(?:[.,]\d+)?(?:[kmgt]i?b?|ms|s|m|h|d|%)? | 0x[0-9a-f]+ # numbers, sizes, durations
    | \d{4}-\d\d-\d\d(?:[t\s]\d\d:\d\d(?::\d\d)?.*)?                 # dates
    | \d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\d+)?                      # IPv4
    | [\w.+-]+@[\w-]+(?:\.[\w-]+)+                                   # e-mail address
    | (?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-\S+|sk-ssh-\S+|sk-ecdsa-\S+)(?:\s.*)?  # public keys
    | AAAA[BC]3NzaC1[A-Za-z0-9+/=]*                                  # their base64 body
    | -----BEGIN[ A-Z]*PUBLIC\ KEY.*
    | [\w.-]+\.apps\.googleusercontent\.com                          # Google OAuth client id
    | (?:pk|pub)_(?:live|test)_\w+ | pk\.eyJ[\w.-]+ | phc_\w+          # publishable keys
    | .*EXAMPLE(?:KEY)?                                              # AWS documentation keys
    | (?:[a-z]+\ )*\#[0-9a-f]{3,8}                                   # colours, styles: "italic #a3aab2"
    """
)
_HEX = re.compile(r"[0-9a-fA-F]+")
# A path rooted at a ``$`` variable: an expression evaluated elsewhere (API Gateway's
# ``$request.header.x-api-key``, ``$context.authorizer.token``, JSONPath's ``$.auth.token``)
_DOLLAR_PATH = re.compile(r"\$(?:[A-Za-z_]\w*)?(?:\.[A-Za-z_][\w-]*)+")
# Template fields inside a value.
_TEMPLATE_PART = re.compile(
    r"""<[A-Za-z_][\w\ -]{0,30}>                     # project__<name>__<hash>
    | \{[A-Za-z_][\w.]*[}(]                       # {name}, {rng.randint(9, 99)} (f-strings)
    | \$\{[\w.-]+\} | \{\{[^}]*\}\}                 # ${VAR}, {{ var }}
    | (?:^|[\s_:{(=./-])%(?:\(\w+\))?[sdrv](?![A-Za-z0-9])  # factory_%s, %(user)s
    """,
    re.VERBOSE,
)
_FORMAT_ONLY = re.compile(r"(?:%(?:\(\w+\))?[sdrv]|\{\w*\}|[^A-Za-z0-9%{}])+")  # %s:%s, {}:{}
# Regular expressions describing secrets, written in rule tables and docs.
_PATTERN = re.compile(
    r"""[A-Za-z0-9]\|[A-Za-z0-9]                     # float64|complex64, a|b
    | \[[^\]]*[a-zA-Z0-9]-[a-zA-Z0-9][^\]]*\]       # [a-zA-Z0-9+/]
    | \[[A-Za-z0-9]{2,}\][-+*?{]                    # xox[baprs]-
    | \[\^ | \\[dwsbDWS] | \{\d+(?:,\d*)?\}       # [^…], \d, {88}
    | \(\?[:!=<] | \.[*+]                            # (?:…), .*
    """,
    re.VERBOSE,
)
# A grammar's repetition of a rule (RFC 5234 ABNF): ``1*tchar``, ``*DIGIT``, ``2*4HEXDIG``,
# ``1*%x30-39`` — the rule name in one case, as grammars write them
_ABNF = re.compile(r"\d*\*\d*(?:[a-z][a-z0-9-]*|[A-Z][A-Z0-9-]*|%[xdb][0-9A-Fa-f]+(?:[.-][0-9A-Fa-f]+)*)")
_WORDS = re.compile(r"[\s_.,/:;'|#。，；：、-]+")
_SEGMENTS = re.compile(r"[_.:/-]+")
_CHUNKS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_VOWELS = frozenset("aeiouyAEIOUY")
_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{5}")
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{2,}")
_NAME_PATH = re.compile(r"[A-Za-z_][\w-]*(?:\[[^\]]*\])?(?:[./:][A-Za-z_][\w-]*(?:\[[^\]]*\])?)+")
_FILE_GLOB = re.compile(r"[\w.-]*\*[\w.-]*\.[A-Za-z]{1,5}")
_EXPRESSION_TOKENS = re.compile(r"[A-Za-z_]\w*|\d+|\S")
_VERSIONISH = re.compile(r"v?\d{1,4}")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    size = len(value)
    if size == 0:
        return 0.0
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


def is_placeholder(value: str) -> bool:
    """``<YOUR_KEY>``, ``${DB_PASSWORD}``, ``{{ secret }}``, ``xxxx``, ``changeme`` …"""
    if value.lower() in PLACEHOLDER_WORDS or _PLACEHOLDER.fullmatch(value) is not None or is_masked(value):
        return True
    if _sequential(value):
        return True  # abcdefgh…, 12345678, ABC12345: an alphabet or a sample, not a key
    if value.endswith(("...", "…")):
        return True  # an example cut short: eyJhbGciOiJIUzI1NiIs...
    if _DOLLAR_PATH.fullmatch(value) is not None and not _mixes_digits(value.split(".")[1:]):
        return True  # $request.header.x-api-key: like $VAR, it names a value kept elsewhere
    # a run of x is our own mask inside a wider value (a masked PEM body inside a JSON
    # string, a masked token after "Bearer"): leaving it alone keeps redaction idempotent
    return ("xxxxxx" in value or "-----BEGIN" in value or _TEMPLATE_PART.search(value) is not None
            or _FORMAT_ONLY.fullmatch(value) is not None)  # fmt: skip


def _sequential(value: str) -> bool:
    """Most of the value is runs of consecutive characters (abc…, 123…)."""
    covered = run = 1
    for a, b in itertools.pairwise(value):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        if run == 3:
            covered += 3
        elif run > 3:
            covered += 1
    return len(value) >= 6 and covered >= 0.6 * len(value)


def is_pattern(value: str) -> bool:
    """A regular expression, glob or grammar rule describing values (``[a-zA-Z0-9+/=]{88}``,
    ``xox[baprs]-``, RFC 7230's ``token = 1*tchar``), written in a rule table or a doc, not a
    secret."""
    stem = value.rstrip("*").rstrip("-_:/!")
    glob = value.endswith("*") and stem.replace("-", "").replace("_", "").isalpha()  # AmazonSageMaker-*
    glob = glob or _FILE_GLOB.fullmatch(value) is not None  # test_*.py
    return _PATTERN.search(value) is not None or glob or _ABNF.fullmatch(value) is not None


def is_reference(value: str) -> bool:
    """Code that names a secret kept elsewhere: ``os.environ[...]``, ``process.env.X``,
    ``settings.OAUTH_CLIENT_SECRET``, ``get_random_secret_key()``, ``$this->secret``."""
    if value.startswith(_REFERENCE_ROOTS) or value.startswith(("!", "&", "*", "@")):
        return True  # … and YAML tags, anchors and aliases, decorators
    if _CALL.match(value) or _MEMBER.fullmatch(value) or _DEFAULT_ARG.fullmatch(value):
        return True
    if _DOTTED.fullmatch(value) is None:
        return False
    # a dotted path of plain identifiers; a part that mixes digits into letters (Tr0ub.4dor)
    # is more likely a password than a path
    return not _mixes_digits(value.split(".")[1:])


def _mixes_digits(parts: list[str]) -> bool:
    """A part of a dotted path mixes digits into letters not all capitals (``Tr0ub.4dor``): a
    password more likely than a path (``api.V2`` is one)."""
    return any(any(ch.isdigit() for ch in p) and not p.isupper() for p in parts)


def is_public_shape(value: str, *, uuid_ok: bool = False) -> bool:
    """Ids, digests, versions, numbers, dates, addresses and public keys. A UUID is one too,
    unless ``uuid_ok``: given to a credential name (``SNYK_TOKEN=<uuid>``) it is the credential."""
    return _NOT_SECRET.fullmatch(value) is not None or (not uuid_ok and _UUID.fullmatch(value) is not None)


def is_path_or_url(value: str) -> bool:
    """A file path or URL: the credential, if any, is the URL rule's business."""
    if "://" in value or value.startswith(("~/", "./", "../", "file:")):
        return True
    if len(value) > 2 and value[1] == ":" and value[2] in "\\/":
        return True
    if not value.startswith("/") or value.count("/") < 2 or "+" in value or "=" in value:
        return False
    # /run/secrets/db_password has words; base64 that starts with / (/9/3sKaIO/vnly…) does not
    return any(part.isalpha() and part.islower() and len(part) >= 2 for part in value.split("/"))


def is_prose(value: str) -> bool:
    """Words, not a credential: lower-case or Capitalised words (any script) joined by spaces,
    ``_``, ``-`` or ``.``, with no digits and no symbols — or with numbers only as separate
    version-like words ("my-app-secret-v2", "rotate keys every 90 days")."""
    words = [w for w in _WORDS.split(value) if w]
    if not words or _mostly_words(value):
        return True
    alpha = 0
    for word in words:
        if word.isalpha():
            if not (word.islower() or word.isupper() or word.istitle() or not word.isascii()):
                return False  # camelCase or mixed case inside one word
            alpha += 1
        elif not _VERSIONISH.fullmatch(word):
            return False
    # a number beside a single word is a password (Avatar-2039); in a phrase, it is prose
    return alpha == len(words) or alpha >= 2 or " " in value.strip()


# Words that describe a value, its type or where it comes from, rather than being one: a
# state (``disabled``, ``rotated``), an instruction (``prompt``, ``stdin``), a type or a
# validation rule (``varchar``, ``nullable``), a metavar written in lower case (``--password
# phrase``), an auth scheme (``bearer``), a mode or a schedule (Ansible's ``update_password:
# always``), a hash scheme (``bcrypt``). A closed class of words; passwords are open-class.
DESCRIBING_WORDS = frozenset(
    """
    mandatory masked encrypted encrypt hashed hash salted plain plaintext cleartext prompt prompted
    ask asked stdin stdout interactive inherit inherited auto automatic generate generated random
    blank missing unknown unchanged same different disabled enabled disable enable unused
    expired revoked rotated removed deleted invalid valid wrong incorrect correct confirmed
    nullable sometimes present filled unique bearer basic digest oauth ntlm kerberos text varchar
    bytes binary boolean integer number secure insecure sensitive private public protected
    readonly writeonly vault keychain keyring manual manually ignored ignore skip skipped any
    anything nothing something whatever word words phrase value values arg argument param
    parameter name file path input output data field label hint blah dummy fake mock sample demo
    local keep kept stored store saved save unset reset change changed update updated forgot
    forgotten lost recover recovery pending later temporary temp permanent weak strong fine works
    shared personal common simple complex good okay float tuple object unicode bytearray files
    always never forever daily weekly monthly yearly alphanumeric lowercase uppercase numeric
    visible strict lenient loose match mismatch absent allowed forbidden remote system native
    builtin external internal environment static dynamic clear unsafe medium minimal maximum
    minimum length complexity policy rules crypt bcrypt scrypt argon pbkdf yescrypt md5crypt
    sha512crypt rotate rotating renew regenerate expire expires expiry mixedcase camelcase
    cache cached anonymous envvar env environ ssm kms
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
# Words that make a phrase a sentence: articles, pronouns, prepositions, auxiliaries and the
# verbs of instructions ("see the vault", "ask the ops team", "enter your password").
FUNCTION_WORDS = frozenset(
    """
    the and for nor but you your yours our ours his her hers its their theirs them they this
    that these those are was were has have had can could may might must shall should will
    would not with from into onto over under about after before when where what which who
    whom how why all each every some there here then than also only just very via per
    please enter type see use used set get put run ask check contact read leave stays
    be to of in on or is it an as at by if so we us do no
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
# How far the syntax vouches for a value made of words (``assign`` decides, ``word_password``
# asks): not at all; it states the value; it is an environment variable's (``NAME=Value``:
# a Capitalised word too); it is a line of a config block (YAML, INI: not a status word)
NOT_STATED, STATED, ENV_STATED, IN_BLOCK = "", "stated", "env", "block"
_PASSPHRASE = re.compile(r"[a-z]{3,}(?:[-_ ][a-z]{3,}){0,7}")
_PASSPHRASE_SPLIT = re.compile(r"[-_ ]")
# Parts of a word that name a credential: a value that says "password" is a label or a
# placeholder (``Enter your password``, ``default_password``, ``proxyuser:proxypass``), not one
_CREDENTIAL_PARTS = ("pass", "pwd", "secret", "token", "credential", "apikey", "login", "motdepasse",
                     "contras", "kennwort", "wachtwoord", "wagwoord", "parol", "salasana", "adgangskode", "senha",
                     "heslo", "haslo", "geslo", "lozinka", "jelszo", "sifre", "sandi", "pasvort", "pasahitz",
                     "cyfrinair", "nenosiri", "lykilor")  # fmt: skip
_CREDENTIAL_WORDS = frozenset({"key", "keys", "pin", "auth", "creds", "cred", "otp"})


def word_password(value: str, *, quoted: bool, how: str = STATED) -> bool:
    """A password made of words, as people choose them: ``blueberry``, ``letmein``,
    ``correct-horse-battery-staple``, in quotes ``correct horse battery staple``. Asked only
    where the syntax says the value *is* the password (``assign`` decides that, and says
    ``how``); there, words are prose only when they read as prose or describe a value
    instead of being one.

    * ASCII letters, five or more, in words of three letters or more joined by ``-``, ``_``
      (or blanks, in quotes), no digits (a digit makes it a password by the other rules
      already), three different letters at least (``aaaaaaaa`` is filler);
    * lower case: people type passphrases so, while a capital makes a word a name — a label
      in quotes (``"password": "Kennwort"``, i18n files), an enum member
      (``-debug-pass=Executions``), a type (``PASSWORD: Incomplete``), a metavar or a
      constant (``--password TEXT``, ``PASSWORD=SECRET``). Only an environment variable's
      ``NAME=Value`` (``ENV_STATED``) takes Capitalised words (``DB_PASSWORD=Blueberry``):
      nothing there is a label or a type, and a capital is what a password rule asks for;
    * no word naming a credential (``Enter your password``, ``default_password``, in a few
      languages: ``PASSWORD=Wachtwoord``), no function word (``see the vault``, ``ask
      ops``), and not only words that describe or stand for a value (``required``,
      ``prompt``, ``plain text``, ``dummy value``, a type: ``float``);
    * on a line of a config block (``IN_BLOCK``: YAML's ``password: blueberry``, INI's
      ``password = blueberry``), whose lines are status reports as often (``password:
      rotated``, ``password: pending``), not one word shaped like a state (``…ed``,
      ``…ing``).
    """
    if len(value) < 5 or (" " in value and not quoted):
        return False
    low = value.lower()
    if _PASSPHRASE.fullmatch(low) is None or len(set(low) - set("-_ ")) < 3:
        return False  # not words; a run of one or two letters is filler (aaaaaaaa, ababab)
    parts = _PASSPHRASE_SPLIT.split(value)
    if value != low and not (how == ENV_STATED and parts[0].istitle() and all(p.islower() or p.istitle() for p in parts)):
        return False
    parts = [p.lower() for p in parts]
    if any(p in FUNCTION_WORDS or p in _CREDENTIAL_WORDS or any(c in p for c in _CREDENTIAL_PARTS) for p in parts):
        return False
    if how == IN_BLOCK and len(parts) == 1 and low.endswith(("ed", "ing")):
        return False
    return not all(p in DESCRIBING_WORDS or p in PLACEHOLDER_WORDS for p in parts)


def _mostly_words(value: str) -> bool:
    """A sentence: six or more words, nearly all of them plain words (a passphrase is shorter)."""
    parts = value.split()
    plain = sum(1 for p in parts if p.strip(".,;:!?()`'\"").isalpha())
    return len(parts) >= 6 and plain >= 0.75 * len(parts)


def is_hex(value: str) -> bool:
    return _HEX.fullmatch(value) is not None


def char_classes(value: str) -> int:
    """How many of lower, upper, digit, symbol the value uses."""
    lower = upper = digit = other = 0
    for ch in value:
        if ch.islower():
            lower = 1
        elif ch.isupper():
            upper = 1
        elif ch.isdigit():
            digit = 1
        else:
            other = 1
    return lower + upper + digit + other


def looks_random(value: str, min_length: int = 16, min_entropy: float = 3.5) -> bool:
    """A machine-made value: long enough, high entropy, more than one character class."""
    return len(value) >= min_length and char_classes(value) >= 2 and entropy(value) >= min_entropy


def plausible_password(value: str, *, quoted: bool, uuid_ok: bool = False, data: bool = False,
                       words: str = NOT_STATED) -> bool:  # fmt: skip
    """Could this value, given to a name like ``password``, be a real credential?

    Short passwords count (``hunter2``), punctuation counts (``Tr0ub4dor&3horse``), spaces
    count inside quotes (a JSON password with spaces); references and data do not. Words
    count only with ``words`` (how the syntax vouches, ``word_password``'s ``how``): the
    syntax says this is the value of a password people choose (``DB_PASSWORD=blueberry``),
    so words there are a password unless they read as prose or describe a value; elsewhere
    they are prose ("token: required for private repos").
    ``data``: the value is data whatever it looks like (a URL query value), never code.
    """
    if len(value) < 5 or is_placeholder(value) or is_public_shape(value, uuid_ok=uuid_ok) or is_path_or_url(value):
        return False
    if is_pattern(value):
        return False
    if not quoted and is_reference(value):
        return False
    if (value[0] in "[{(" and value[-1] in "]})") or (not quoted and value[0] in "{["):
        return False  # [PAD], {…}: a list, a mapping, a special token
    if is_prose(value):
        return words != NOT_STATED and word_password(value, quoted=quoted, how=words)
    if data:
        return True
    if identifier(value) and not any(ch.isdigit() for ch in value):
        # an identifier without digits: a variable, a constant, an enum member — or, where
        # the syntax says it is the password, a word someone chose (letmein)
        return words != NOT_STATED and word_password(value, quoted=quoted, how=words)
    if _name_path(value) or _expression(value):
        return False  # CloudFrontOriginAccessIdentityList.NextMarker, NextToken || Marker: code
    # a path or a credential scope (key-id/20240101/us-east-1/s3/aws4_request) is not either
    return not ("/" in value and _worded(value, 2))


def _worded(value: str, words: int) -> bool:
    """At least ``words`` parts of the value are lower-case words of 3+ letters."""
    return sum(1 for w in _SEGMENTS.split(value) if len(w) >= 3 and w.isalpha() and w.islower()) >= words


def _wordlike(chunk: str) -> bool:
    """Pronounceable: a vowel, no five consonants in a row (Password, Types — not Hhmqs)."""
    return any(ch in _VOWELS for ch in chunk) and _CONSONANT_RUN.search(chunk.lower()) is None


def identifier(value: str, *, abbreviations: bool = False) -> bool:
    """Words glued the way code names things (newPassword, NotSet, AWSAccessKeyId,
    DB_PASSWORD, PKCS12PrivateKeyTypes): most letters sit in pronounceable words of three
    letters or more (two thirds; acronyms do not count, nor with ``abbreviations`` do
    three-letter ones like Str), no chunk of four or more is gibberish, at most two numbers.
    Random letters (oTXzoWblsevHhmqs, SeEMNnCTYJgaPRPW) split into short or unpronounceable
    chunks. Abbreviations count only where the place says "a type" (a parameter list):
    taken everywhere, they would let a fifth more random-letter passwords pass for names."""
    if _IDENT.fullmatch(value) is None:
        return False
    if len(value) <= 3:
        return True  # a, cos, pw: too short to be anything but a name
    chunks = _CHUNKS.findall(value)
    # abbreviations sit among words (AnyStr, StrOrBytes); random letters break into pairs and
    # single letters as well (dgLCKfICyaHllUkna)
    abbreviations = abbreviations and sum(1 for c in chunks if len(c) < 3 and not c.isdigit() and not c.isupper()) <= 1
    total = in_words = numbers = 0
    for chunk in chunks:
        if chunk.isdigit():
            numbers += 1
            continue
        if chunk.isupper() and len(chunk) <= 4:
            continue  # numbers and acronyms (PKCS, AWS, DB) say nothing either way
        if abbreviations and len(chunk) == 3 and not _wordlike(chunk):
            continue  # nor, in a type's name, do abbreviations (Str, Ptr, Ctx)
        total += len(chunk)
        if len(chunk) >= 4 and not _wordlike(chunk):
            return False
        if len(chunk) >= 3 and _wordlike(chunk):
            in_words += len(chunk)
    # a name carries a number or two (Ed25519PrivateKey); random text sprinkles digits
    return total > 0 and in_words * 3 >= total * 2 and numbers <= 2


def type_name(value: str, *, abbreviations: bool = False) -> bool:
    """A class or type name made of capitalised words (PKCS12PrivateKeyTypes,
    ed25519.Ed25519PrivateKey; with ``abbreviations``, AnyStr); random tokens do not split
    into words."""
    parts = value.split(".")
    last = parts[-1]
    if not (last[:1].isupper() and len(_CAMEL_WORD.findall(last)) >= 2 and identifier(last, abbreviations=abbreviations)):
        return False
    if any(len(c) < 3 and not c.isdigit() and not c.isupper() and not c.istitle() for c in _CHUNKS.findall(last)):
        return False  # a stray letter or two (…7eGIi…): random, not words
    return all(identifier(p) or (p.isalnum() and len(p) <= 12) for p in parts[:-1])


def _expression(value: str) -> bool:
    """Names joined by operators (NextContinuationToken || NextKeyMarker): an expression."""
    tokens = _EXPRESSION_TOKENS.findall(value)
    names = [t for t in tokens if t[0].isalpha() or t[0] == "_"]
    code = "||" in value or "&&" in value or any(t in ".[(" for t in tokens)  # not Refund75&deploy
    if len(names) < 2 or not code or not all(identifier(t) for t in names):
        return False
    return all(t.isdigit() or t in names or t in "|&+*/.[]()=<>!:,-" for t in tokens)


def _name_path(value: str) -> bool:
    """A property or a namespaced name (io.modelcontextprotocol/clientInfo, stateMachine:createdBy)."""
    if _NAME_PATH.fullmatch(value) is None:
        return False
    parts = [p for p in re.split(r"[./:]|\[[^\]]*\]", value) if p]
    wordy = [p for p in parts if len(p) >= 4 and p.replace("-", "").replace("_", "").isalpha() and identifier(p.replace("-", "_"))]
    return len(wordy) >= 2 or any(len(p) >= 10 for p in wordy)


def plausible_key(value: str, *, hex_ok: bool, min_length: int = 16, min_entropy: float = 3.5) -> bool:
    """Could this value, given to a weaker name like ``deploy_key`` or ``salt``, be a secret?
    Only machine-made values count; a hex string only where the name says it is key material."""
    if len(value) < min_length or is_placeholder(value) or is_public_shape(value) or is_path_or_url(value):
        return False
    if is_reference(value) or is_prose(value) or is_pattern(value) or (not hex_ok and is_hex(value)):
        return False
    if any(ch.isspace() for ch in value):
        return False  # machine-made keys have no blanks
    if _worded(value, 2):
        return False  # words with an id or hash appended: project__omx__3973e808fbe5
    if identifier(value) and not any(ch.isdigit() for ch in value):
        return False  # a word, even a long CamelCase one: ClearTextPassword
    if _IDENT.fullmatch(value) and any(len(w) >= 4 and w.isalpha() and w.islower() for w in value.split("_")[1:]):
        return False  # an identifier: sos2tf_signature
    if _name_path(value):
        return False  # a property or a namespaced name: io.modelcontextprotocol/clientInfo
    if value[0] in "[{(" and value[-1] in "]})":
        return False  # a list or a mapping
    return looks_random(value, min_length, min_entropy)
