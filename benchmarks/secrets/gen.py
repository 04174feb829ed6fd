"""Seeded random values in the alphabets providers use. All fake, all generated here."""

from __future__ import annotations

import base64
import random
import string
import uuid

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = string.ascii_uppercase + "234567"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


class Gen:
    """A seeded source of random-looking values; one per corpus, so runs repeat."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def alnum(self, n: int) -> str:
        return self.pick(ALNUM, n)

    def hex(self, n: int) -> str:
        return self.pick(HEX, n)

    def b64(self, n: int) -> str:
        return self.pick(B64, n)

    def b64url(self, n: int) -> str:
        return self.pick(B64URL, n)

    def digits(self, n: int) -> str:
        return self.pick(string.digits, n)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def ulid(self) -> str:
        return self.rng.choice("01") + self.pick(CROCKFORD, 25)

    def bytes_b64(self, n: int) -> str:
        return base64.b64encode(bytes(self.rng.getrandbits(8) for _ in range(n))).decode()

    def choice(self, items: list[str] | tuple[str, ...]) -> str:
        return self.rng.choice(list(items))

    def password(self) -> str:
        """A human-made password: words, digits, punctuation, the way people make them."""
        word = self.choice(WORDS).capitalize() if self.rng.random() < 0.6 else self.choice(WORDS)
        leet = word.replace("o", "0").replace("e", "3") if self.rng.random() < 0.5 else word
        tail = self.digits(self.rng.randint(1, 4))
        sym = self.choice("!@#$%&*?_-+=~^")
        parts = [leet, sym, tail] if self.rng.random() < 0.5 else [leet, tail, sym]
        if self.rng.random() < 0.4:
            parts.append(self.choice(WORDS))
        return "".join(parts)

    def short_password(self) -> str:
        """Short and weak, still a password: hunter2, dragon77."""
        return self.choice(WORDS)[: self.rng.randint(4, 7)] + self.digits(self.rng.randint(1, 3))

    def passphrase(self) -> str:
        """A password of plain words, as people choose them: one dictionary word (letmein-style)
        or a Diceware-style passphrase of three to five words joined by ``-`` or ``_``."""
        if self.rng.random() < 0.4:
            return self.choice(PASSPHRASE_WORDS)
        return self.choice("-_").join(self.choice(PASSPHRASE_WORDS) for _ in range(self.rng.randint(3, 5)))

    def words(self, n: int) -> str:
        return " ".join(self.choice(WORDS) for _ in range(n))


WORDS = ["staging", "deploy", "release", "runner", "cache", "index", "search", "memory", "review", "draft", "approve", "merge", "branch", "pipeline", "cluster", "replica", "shard", "queue", "worker", "cron", "backup", "restore", "migrate", "schema", "table", "column", "query", "latency", "budget", "alert", "pager", "incident", "rollback", "canary", "feature", "flag", "toggle", "tenant", "account", "billing", "invoice", "payment", "refund", "ledger", "export", "import", "bundle", "archive", "upload", "download", "bucket", "region", "zone", "network", "gateway", "proxy", "ingress", "router", "service", "client", "server", "socket", "stream", "buffer", "packet", "header", "token", "secret", "password", "session", "cookie", "login", "logout", "signup", "profile", "avatar", "settings", "config", "option", "parser", "lexer", "tokenizer", "compiler", "linker", "module", "package", "library", "plugin", "adapter", "driver", "connector", "dragon", "falcon", "hunter", "summer", "winter", "autumn", "spring", "ocean", "river", "forest", "mountain", "valley", "thunder", "silver", "orange", "purple", "yellow", "violet", "copper", "marble", "granite", "crystal", "shadow", "phoenix", "tiger", "panther"]
# Ordinary words of a Diceware-style list (the EFF list's flavour), for passwords made of words
PASSPHRASE_WORDS = ["acorn", "anchor", "badger", "banjo", "basket", "beacon", "blossom", "bramble", "bucket", "cactus",
                    "candle", "canyon", "carrot", "cedar", "cobalt", "comet", "cricket", "dolphin", "ember", "fennel",
                    "garnet", "harbor", "hazel", "island", "jasper", "kettle", "lantern", "lemon", "maple", "meadow",
                    "mitten", "nectar", "nutmeg", "oyster", "pebble", "pickle", "quartz", "raven", "sparrow", "thistle",
                    "tulip", "velvet", "walnut", "willow", "zephyr"]  # fmt: skip
