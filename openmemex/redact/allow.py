"""What is never a secret: placeholders, references, hashes, ids, public keys and prose.

A false positive on the write path destroys text the user wanted kept (D14 masks in
place), so the generic rules ask these questions of every value before masking it. The
answers are decided by the value's *shape*, not by a list of known examples: a value made
of lower-case words joined by ``_``, ``-`` or spaces, with no digits, reads as prose
("remember_to_rotate_keys_monthly"), a dotted identifier reads as a reference
(``settings.OAUTH_CLIENT_SECRET``), a call as code (``get_random_secret_key()``).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from openmemex.redact.masking import is_masked

# Values that stand for a secret instead of being one.
PLACEHOLDER_WORDS = frozenset(
    """
    changeme change_me change-me changeit redacted placeholder example examples sample dummy
    secret secrets password passwd pass pwd passphrase token tokens apikey api_key api-key key
    none null nil undefined true false yes no on off todo tbd fixme required optional hidden
    empty unset default string str value values mysecret mypassword mytoken foo bar baz foobar
    qux test testing admin root guest user username postgres mysql letmein xxx
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
_PLACEHOLDER = re.compile(
    r"""(?ix)
      <.*                              # <YOUR_KEY>, <password>
    | \$\{.* | \$\{\{.* | \$\(.*      # ${DB_PASSWORD}, ${{ secrets.X }}, $(cat file)
    | \$(?-i:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)\}?   # $DB_PASSWORD, $password
    | \{\{.* | \{%.* | \{[A-Za-z_0-9.]*\}.*  # {{ secret }}, {password}
    | %\(?[A-Za-z_]*\)?[sdvr]         # %s, %(password)s
    | %[A-Za-z_][A-Za-z0-9_]*%        # %PASSWORD%
    | [*xX•·.…_#-]+                   # ****, xxxx, ..., ———
    | \[redacted\] | \(redacted\) | \*\*\*.*
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
_MEMBER = re.compile(r"\$?[A-Za-z_]\w*(?:(?:->|::)[A-Za-z_]\w*)+")  # $this->secret, Config::KEY

# Shapes that are identifiers, digests or ordinary data, never credentials.
_UUID = re.compile(r"\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?")
_NOT_SECRET = re.compile(
    r"""(?ix)
      [0-7][0-9abcdefghjkmnpqrstvwxyz]{25}                           # ULID
    | (?:sha(?:1|224|256|384|512)|md5|blake2b?)[:-][A-Za-z0-9+/=_-]+  # sha256:…, sha512-… (lockfiles)
    | h1:[A-Za-z0-9+/]{40,}={0,2}                                    # go.sum
    | v?\d+(?:\.\d+)+(?:[-+][\w.]+)?                                 # versions
    | [+-]?\d+(?:[.,]\d+)?(?:[kmgt]i?b?|ms|s|m|h|d|%)?                # numbers, sizes, durations
    | \d{4}-\d\d-\d\d(?:[t\s]\d\d:\d\d(?::\d\d)?.*)?                 # dates
    | \d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:/\d+)?                      # IPv4
    | [\w.+-]+@[\w-]+(?:\.[\w-]+)+                                   # e-mail address
    | (?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-\S+|sk-ssh-\S+|sk-ecdsa-\S+)(?:\s.*)?  # public keys
    | AAAA[BC]3NzaC1[A-Za-z0-9+/=]*                                  # their base64 body
    | -----BEGIN[ A-Z]*PUBLIC\ KEY.*
    | [\w.-]+\.apps\.googleusercontent\.com                          # Google OAuth client id
    | (?:pk|pub)_(?:live|test)_\w+ | pk\.eyJ[\w.-]+ | phc_\w+          # publishable keys
    | .*EXAMPLE(?:KEY)?                                              # AWS documentation keys
    """
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_WORDS = re.compile(r"[\s_.,/:;'。，；：、-]+")
_SEGMENTS = re.compile(r"[_.:/-]+")
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
    # a run of x is our own mask inside a wider value (a masked PEM body inside a JSON
    # string, a masked token after "Bearer"): leaving it alone keeps redaction idempotent
    return "xxxxxx" in value or "-----BEGIN" in value


def is_reference(value: str) -> bool:
    """Code that names a secret kept elsewhere: ``os.environ[...]``, ``process.env.X``,
    ``settings.OAUTH_CLIENT_SECRET``, ``get_random_secret_key()``, ``$this->secret``."""
    if value.startswith(_REFERENCE_ROOTS) or value.startswith(("!", "&", "*", "@")):
        return True  # … and YAML tags, anchors and aliases, decorators
    if _CALL.match(value) or _MEMBER.fullmatch(value):
        return True
    if _DOTTED.fullmatch(value) is None:
        return False
    parts = value.split(".")
    # a dotted path of plain identifiers; a part that mixes digits into letters (Tr0ub.4dor)
    # is more likely a password than a path
    return not any(any(ch.isdigit() for ch in p) and not p.isupper() for p in parts[1:])


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
    return value.startswith("/") and value.count("/") >= 2 and "+" not in value and "=" not in value


def is_prose(value: str) -> bool:
    """Words, not a credential: lower-case or Capitalised words (any script) joined by spaces,
    ``_``, ``-`` or ``.``, with no digits and no symbols — or with numbers only as separate
    version-like words ("my-app-secret-v2", "rotate keys every 90 days")."""
    words = [w for w in _WORDS.split(value) if w]
    if not words:
        return True
    alpha = 0
    for word in words:
        if word.isalpha():
            if not (word.islower() or word.isupper() or word.istitle() or not word.isascii()):
                return False  # camelCase or mixed case inside one word
            alpha += 1
        elif not _VERSIONISH.fullmatch(word):
            return False
    # a number beside a single word is a password (Avatar-2039); beside a phrase, it is prose
    return alpha == len(words) or alpha >= 2


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


def plausible_password(value: str, *, quoted: bool, uuid_ok: bool = False) -> bool:
    """Could this value, given to a name like ``password``, be a real credential?

    Short passwords count (``hunter2``), punctuation counts (``Tr0ub4dor&3horse``), spaces
    count inside quotes (a JSON password with spaces); words, references and data do not.
    """
    if len(value) < 5 or is_placeholder(value) or is_public_shape(value, uuid_ok=uuid_ok) or is_path_or_url(value):
        return False
    if not quoted and (is_reference(value) or value[0] in "{["):
        return False
    if is_prose(value):
        return False
    if _IDENT.fullmatch(value) and not any(ch.isdigit() for ch in value):
        # an identifier without digits: a variable in code, a word in a config file
        return (quoted and looks_random(value)) or looks_random(value, 20, 4.0)
    return True


def plausible_key(value: str, *, hex_ok: bool, min_length: int = 16, min_entropy: float = 3.5) -> bool:
    """Could this value, given to a weaker name like ``deploy_key`` or ``salt``, be a secret?
    Only machine-made values count; a hex string only where the name says it is key material."""
    if len(value) < min_length or is_placeholder(value) or is_public_shape(value) or is_path_or_url(value):
        return False
    if is_reference(value) or is_prose(value) or (not hex_ok and is_hex(value)):
        return False
    if sum(1 for w in _SEGMENTS.split(value) if len(w) >= 3 and w.isalpha() and w.islower()) >= 2:
        return False  # words with an id or hash appended: project__omx__3973e808fbe5
    if value.isalpha() and not looks_random(value, 20, 4.0):
        return False  # a word, even a long CamelCase one: ClearTextPassword
    return looks_random(value, min_length, min_entropy)
