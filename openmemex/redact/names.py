"""Which names hold credentials: ``DB_PASSWORD`` does, ``password_hint`` and ``max_tokens`` don't.

A name is split into lower-case words (snake, kebab, dotted and camel case alike), then:

* **strong** names (password, secret, token, api key, credentials …) are credentials
  whatever the value looks like, short or punctuated — only placeholders, references and
  prose are spared;
* **weak** names (``*_key``, salt, signature, auth, session, cookie …) hold a secret only
  when the value is machine-made (long, high entropy): ``deploy_key = "aB3d…"`` is,
  ``key: value`` is not;
* a name with a word that says "this is about a secret, not the secret" (``_id``,
  ``_hint``, ``public``, ``max``, ``hash`` …) holds none.
"""

from __future__ import annotations

import itertools
import re
from enum import IntEnum
from functools import lru_cache

from openmemex.lazyre import LazyPattern


class Strength(IntEnum):
    NONE = 0
    WEAK = 1
    STRONG = 2


CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = LazyPattern(r"[^0-9a-z\u0080-\uffff]+")  # compiled on first use (lazyre), not at every import (1.5 ms)

# Substrings that make any word strong.
_STRONG_PARTS = (
    "password", "passwd", "passphrase", "passcode", "passwort", "pwd", "secret", "credential", "creds",
    "apikey", "privatekey", "privkey", "accesskey", "secretkey", "authtoken", "accesstoken",
    "contrasena", "contraseña", "motdepasse", "密码", "口令", "密钥", "令牌", "token",
)  # fmt: skip
_PASS_NOT = frozenset({"bypass", "compass", "encompass", "overpass", "underpass", "surpass", "trespass", "multipass"})
_STRONG_PAIRS = {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("priv", "key"),
                 ("auth", "key"), ("master", "key"), ("signing", "key"), ("encryption", "key")}  # fmt: skip
_WEAK_WORDS = frozenset(
    {"key", "salt", "signature", "sig", "hmac", "auth", "oauth", "session", "cookie", "license", "seed",
     "dsn", "cert", "jwt", "pin", "otp", "totp", "mfa", "passkey", "bearer", "basic"}
)  # fmt: skip
# Words that say the value describes a secret rather than being one.
_NEVER = frozenset(
    """
    public pub publishable id ids name names type types path file files dir folder url uri urls
    endpoint host hosts port length len size count max min timeout ttl expiry expires expiration
    expire at version format header headers field fields prefix suffix env var hint label policy
    regex pattern algorithm alg mode scheme enabled enable disabled required provider manager
    store ref arn location rotation rotate hash hashed digest checksum sha sha1 sha256 sha512
    md5 fingerprint etag integrity commit rev revision uuid guid nonce cursor index idx
    tokenizer tokenize tokens keys keyword keywords keyboard keymap keybinding keybindings
    hotkey keyspace keystore keyring keychain keypair placeholder description desc help message
    msg error errors title prompt doc docs comment reset forgot strength rule rules complexity
    validator validation input form column col table schema model class widget icon button
    visible show hide masked limit budget usage cost price rate window interval duration
    lifetime period retries attempts page pagination continuation paging next previous prev csrf
    xsrf idempotency cache method methods num number sample example examples template encoding
    secretname secretref secretkeyref valuefrom scope scopes
    py md json yaml yml toml txt js ts rs sh cfg ini conf log csv html css spec specs state status
    origin kind existing
    """.split()  # noqa: SIM905 (a word list reads best as words)
)


_NEVER_SUFFIXES = tuple(w for w in _NEVER if len(w) >= 3)


def words(name: str) -> list[str]:
    """``dbPassword`` → [db, password]; ``X-Api-Key`` → [x, api, key]; ``PGPASSWORD`` → [pgpassword]."""
    return [w for w in _SPLIT.split(CAMEL.sub("_", name).lower()) if w]


def _strong_word(word: str, last: bool) -> bool:
    if any(part in word for part in _STRONG_PARTS):
        # secretsmanager, passwordpolicy, tokenurl: a compound that names a thing about secrets
        return not word.startswith(("tokeniz", "tokens")) and word != "secrets" and not word.endswith(_NEVER_SUFFIXES)
    if not last:
        return False  # pass_filenames, pass_through, pw_hash: a verb or a qualifier, not a noun
    if word in ("pw", "pat") or word.endswith("pw"):
        return True
    return word == "pass" or (word.endswith("pass") and word not in _PASS_NOT)


@lru_cache(maxsize=4096)
def strength(name: str) -> Strength:
    """How strongly ``name`` says its value is a credential. A dotted name is judged by its
    last part: ``db.password`` is one, ``token.content`` is not."""
    parts = words(name.rsplit(".", 1)[-1] if "." in name.strip(".") else name)
    if not parts or any(w in _NEVER for w in parts):
        return Strength.NONE
    if any(_strong_word(w, i == len(parts) - 1) for i, w in enumerate(parts)):
        return Strength.STRONG
    if any(pair in _STRONG_PAIRS for pair in itertools.pairwise(parts)):
        return Strength.STRONG
    if any(w in _WEAK_WORDS or w.endswith(("key", "salt", "auth")) for w in parts):
        return Strength.WEAK
    return Strength.NONE


_PASSWORD_ENDS = ("password", "passwd", "passphrase", "passcode", "passwort", "pwd", "contrasena", "contraseña",
                  "motdepasse", "密码", "口令")  # fmt: skip


@lru_cache(maxsize=4096)
def chosen_by_people(name: str) -> str | None:
    """Whether the name holds a credential people choose, so that a value made of words can
    be one: ``"password"`` for a password or passphrase (``DB_PASSWORD``, ``PGPASSWORD``,
    ``smtp_pass``), ``"secret"`` for a shared secret (``SESSION_SECRET``) — which names a
    stored secret as often (``secret: tls-certs``, ``--secret app-config``), so it takes
    words in fewer places — else None. Tokens and API keys are issued by a service,
    machine-made: a word given to one is a placeholder (``API_KEY=demo``)."""
    parts = words(name.rsplit(".", 1)[-1] if "." in name.strip(".") else name)
    if not parts:
        return None
    last = parts[-1]
    if last.endswith(_PASSWORD_ENDS) or last == "pw" or (last.endswith("pass") and last not in _PASS_NOT):
        return "password"  # not …pw glued to a word: TBN_GETINFOTIPW is a Windows constant
    return "secret" if last.endswith("secret") else None


def key_material(name: str) -> bool:
    """A weak name that says its value is key material, where a hex string is the key
    itself (``ENCRYPTION_KEY=<64 hex>``), not a digest (``cache_key=<sha1>``)."""
    return any(w in ("encryption", "signing", "master", "hmac", "aes", "secret", "private", "session", "jwt",
                     "app", "deploy", "client", "service", "webhook", "cookie", "crypt", "cipher", "license")
               for w in words(name))  # fmt: skip


def short_name(name: str) -> str:
    """The name as reported in ``high-entropy-secret:<name>``: the last dotted part."""
    return name.rsplit(".", 1)[-1].lstrip("-$").strip("\"'`[]")
