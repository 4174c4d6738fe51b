"""A WebShop-like shopping environment, generated offline.

WebShop (Yao et al. 2022) cannot be installed offline, so this builds its shape from a
deterministic generator: a catalogue of products (category, attributes, options,
price) and instructions asking for a product with some attributes, one value per
option and a price bound.  Pages are text; the admissible actions of every page are
listed in ``info["admissible"]``:

    search page  --search[<query>]-->  results page  --click[<title>]-->  item page
    item page: click[<option value>] (select), click[buy now] (ends), click[< prev]
    results page: click[back to search]

The reward on buying is WebShop's matching score (Yao et al. 2022, Sec. 3.1)::

    r = r_type * (|U_att ∩ Y_att| + |U_opt ∩ Y_opt| + 1[y_price <= u_price])
                 / (|U_att| + |U_opt| + 1)

with ``r_type`` = 1 for the asked category, 0.5 for another category of the same
department, 0.1 otherwise (WebShop grades the product type by text matching into the
same {0.1, 0.5, 1} levels).  Success means reward 1.  An episode that has not bought
after ``max_steps`` actions ends with reward 0.

The task splits follow WebShop's and REMEMBERER's shape: a test set and two disjoint
training sets of 10 instructions each.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from memrl.runtime import atomic_write_text

# department -> categories, attributes, option types
DEPARTMENTS: dict[str, dict[str, Any]] = {
    "clothing": {
        "categories": ["t-shirt", "hoodie", "jeans"],
        "attributes": [
            "cotton",
            "slim fit",
            "machine wash",
            "long sleeve",
            "relaxed fit",
            "stretch",
        ],
        "options": {
            "size": ["small", "medium", "large", "x-large"],
            "color": ["black", "white", "navy", "grey"],
        },
    },
    "beauty": {
        "categories": ["shampoo", "face cream", "lip balm"],
        "attributes": [
            "paraben free",
            "organic",
            "fragrance free",
            "travel size",
            "vegan",
            "sensitive skin",
        ],
        "options": {"size": ["2 oz", "8 oz", "16 oz"]},
    },
    "grocery": {
        "categories": ["coffee", "green tea", "granola"],
        "attributes": ["gluten free", "sugar free", "decaf", "non gmo", "fair trade", "low fat"],
        "options": {"size": ["12 oz", "1 lb", "2 lb"]},
    },
    "electronics": {
        "categories": ["headphones", "phone case", "usb cable"],
        "attributes": [
            "wireless",
            "noise cancelling",
            "fast charging",
            "waterproof",
            "bluetooth",
            "long lasting",
        ],
        "options": {"color": ["black", "white", "red", "blue"]},
    },
    "home": {
        "categories": ["pillow", "candle", "bath towel"],
        "attributes": [
            "machine washable",
            "scented",
            "hypoallergenic",
            "eco friendly",
            "queen size",
            "handmade",
        ],
        "options": {"color": ["white", "beige", "blue", "green"]},
    },
}
BRANDS = ["acme", "brightline", "cozyco", "duneworks", "evergreen", "fable", "gildan", "harbor"]


@dataclass(frozen=True)
class Product:
    pid: str
    title: str
    department: str
    category: str
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]
    price: float


@dataclass(frozen=True)
class ShopTask:
    tid: str
    instruction: str
    department: str
    category: str
    attributes: tuple[str, ...]
    options: dict[str, str]
    max_price: float
    queries: tuple[str, ...] = field(default=())  # the search actions offered on the first page


def generate_shop(
    seed: int, per_category: int, n_test: int, n_train: int, n_init: int = 4
) -> tuple[list[Product], dict[str, list[ShopTask]]]:
    """A catalogue and its task splits, from ``seed`` only.

    Splits: ``test``, two disjoint training sets ``train_a`` / ``train_b`` and ``init``, the
    tasks whose annotated (expert) trajectories seed the initial memories.
    """
    rng = np.random.default_rng(seed)
    products: list[Product] = []
    titles: set[str] = set()
    for dep, spec in DEPARTMENTS.items():
        for cat in spec["categories"]:
            for _ in range(per_category):
                attrs = tuple(sorted(map(str, rng.choice(spec["attributes"], 3, replace=False))))
                opts = {
                    k: tuple(v for v in vals if rng.random() < 0.75) or (vals[0],)
                    for k, vals in spec["options"].items()
                }
                shown = [a for a in attrs if rng.random() < 0.5]  # the rest only on the item page
                brand = BRANDS[int(rng.integers(len(BRANDS)))]
                title = " ".join([brand, *shown, cat])
                k = 2
                while title in titles:  # titles name products on the results page: unique
                    title, k = " ".join([brand, *shown, cat, f"model {k}"]), k + 1
                titles.add(title)
                price = float(np.round(rng.uniform(5, 80), 2))
                products.append(
                    Product(f"P{len(products):04d}", title, dep, cat, attrs, opts, price)
                )
    n = n_test + 2 * n_train + n_init
    picks = rng.choice(len(products), size=n, replace=False)
    tasks = []
    for i, pi in enumerate(picks):
        p = products[int(pi)]
        want = tuple(sorted(map(str, rng.choice(p.attributes, size=2, replace=False))))
        opts = {k: str(rng.choice(v)) for k, v in p.options.items()}
        max_price = float(np.ceil(p.price * rng.uniform(1.1, 1.8)))
        opt_text = " and ".join(f"{v} {k}" for k, v in opts.items())
        text = (
            f"i am looking for a {want[0]} and {want[1]} {p.category} in {opt_text}, "
            f"and price lower than {max_price:.0f} dollars"
        )
        others = [c for d in DEPARTMENTS.values() for c in d["categories"] if c != p.category]
        decoy = str(rng.choice(others))
        queries = [
            p.category,
            f"{want[0]} {p.category}",
            f"{want[0]} {want[1]} {p.category}",
            decoy,
        ]
        order = rng.permutation(len(queries))
        tasks.append(
            ShopTask(
                f"T{i:03d}",
                text,
                p.department,
                p.category,
                want,
                opts,
                max_price,
                tuple(queries[j] for j in order),
            )
        )
    splits = {
        "test": tasks[:n_test],
        "train_a": tasks[n_test : n_test + n_train],
        "train_b": tasks[n_test + n_train : n_test + 2 * n_train],
        "init": tasks[n_test + 2 * n_train :],
    }
    return products, splits


def shop_reward(task: ShopTask, product: Product, chosen: Mapping[str, str]) -> float:
    """WebShop's matching score of buying ``product`` with options ``chosen`` for ``task``."""
    if product.category == task.category:
        r_type = 1.0
    elif product.department == task.department:
        r_type = 0.5
    else:
        r_type = 0.1
    r_att = len(set(task.attributes) & set(product.attributes))
    r_opt = sum(chosen.get(k) == v for k, v in task.options.items())
    r_price = float(product.price <= task.max_price)
    return r_type * (r_att + r_opt + r_price) / (len(task.attributes) + len(task.options) + 1)


# --------------------------------------------------------------------------- files
def save_shop(path: str | Path, products: Sequence[Product], splits: Mapping[str, list[ShopTask]]):
    """Write ``catalogue.json`` and ``tasks.json`` into ``path`` (each atomically)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path / "catalogue.json", json.dumps([asdict(p) for p in products], indent=1))
    atomic_write_text(
        path / "tasks.json",
        json.dumps({k: [asdict(t) for t in v] for k, v in splits.items()}, indent=1),
    )


def load_shop(path: str | Path) -> tuple[list[Product], dict[str, list[ShopTask]]]:
    """Read a catalogue and task splits written by :func:`save_shop`."""
    path = Path(path)
    for f in ("catalogue.json", "tasks.json"):
        if not (path / f).is_file():
            raise FileNotFoundError(f"{path / f} is missing: run `make data` to build data/")
    cat = json.loads((path / "catalogue.json").read_text())
    products = [
        Product(
            **{
                **p,
                "attributes": tuple(p["attributes"]),
                "options": {k: tuple(v) for k, v in p["options"].items()},
            }
        )
        for p in cat
    ]
    raw = json.loads((path / "tasks.json").read_text())
    splits = {
        k: [
            ShopTask(**{**t, "attributes": tuple(t["attributes"]), "queries": tuple(t["queries"])})
            for t in v
        ]
        for k, v in raw.items()
    }
    return products, splits


# --------------------------------------------------------------------------- environment
_WORD = re.compile(r"[a-z0-9-]+")
CHARSET = string.printable  # pages and actions: printable ASCII text


class ShopEnv(gym.Env):
    """Text shopping episodes over one catalogue; ``reset(options={"task": ShopTask})``, or
    a task drawn from ``tasks`` (with the env's seeded generator) when none is given.

    Observations are page texts; an action is one of ``info["admissible"]``. Anything else
    leaves the page as it was, as in WebShop: no reward, the step counted,
    ``info["invalid"]`` set. ``info["page"]`` is the page type.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        products: Sequence[Product],
        max_steps: int = 10,
        n_results: int = 5,
        tasks: Sequence[ShopTask] = (),
    ):
        self.products = list(products)
        self.tasks = list(tasks)
        self.by_title = {p.title: p for p in self.products}
        self.max_steps, self.n_results = max_steps, n_results
        self.observation_space = gym.spaces.Text(max_length=4096, charset=CHARSET)
        self.action_space = gym.spaces.Text(max_length=256, charset=CHARSET)
        self.task: ShopTask | None = None

    # ------------------------------------------------------------------ search
    def search(self, query: str) -> list[Product]:
        """The ``n_results`` best products for ``query``: most query words in title+attributes."""
        q = set(_WORD.findall(query.lower()))

        def score(p: Product) -> int:
            words = set(_WORD.findall(" ".join([p.title, p.category, *p.attributes])))
            return len(q & words)

        ranked = sorted(self.products, key=lambda p: (-score(p), p.pid))
        return ranked[: self.n_results]

    # ------------------------------------------------------------------ pages
    def _render(self) -> tuple[str, list[str]]:
        t = self.task
        if self.page == "search":
            return "[search page]", [f"search[{q}]" for q in t.queries]
        if self.page == "results":
            lines = [f"[results for '{self.query}']"]
            lines += [f"{p.title} ${p.price:.2f}" for p in self.results]
            return "\n".join(lines), [f"click[{p.title}]" for p in self.results] + [
                "click[back to search]"
            ]
        p = self.item
        opts = "; ".join(f"{k}: {' | '.join(v)}" for k, v in p.options.items())
        chosen = ", ".join(f"{k}={v}" for k, v in self.chosen.items()) or "none"
        text = (
            f"[item page] {p.title}\nprice: ${p.price:.2f}\nfeatures: {', '.join(p.attributes)}\n"
            f"options: {opts}\nselected: {chosen}"
        )
        acts = [f"click[{v}]" for vals in p.options.values() for v in vals]
        return text, [*acts, "click[buy now]", "click[< prev]"]

    def _obs(self) -> tuple[str, dict[str, Any]]:
        text, acts = self._render()
        self.admissible = acts
        return text, {"admissible": list(acts), "page": self.page, "task": self.task}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is None and self.tasks:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        if not isinstance(task, ShopTask):
            raise ValueError(
                "ShopEnv.reset needs options={'task': ShopTask}, or tasks to draw from "
                "(ShopEnv(products, tasks=...))"
            )
        self.task = task
        self.page, self.query, self.results, self.item = "search", "", [], None
        self.chosen: dict[str, str] = {}
        self.steps = 0
        return self._obs()

    def step(self, action: str):
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        if action not in self.admissible:  # WebShop: the page stays, the step counts
            truncated = self.steps >= self.max_steps
            obs, info = self._obs()
            return obs, 0.0, False, truncated, {**info, "success": False, "invalid": True}
        reward, done = 0.0, False
        arg = action[action.index("[") + 1 : -1]
        if action.startswith("search["):
            self.page, self.query, self.results = "results", arg, self.search(arg)
        elif arg == "back to search":
            self.page = "search"
        elif arg == "< prev":
            self.page, self.item, self.chosen = "results", None, {}
        elif arg == "buy now":
            reward, done = shop_reward(self.task, self.item, self.chosen), True
        elif self.page == "results":
            self.page, self.item, self.chosen = "item", self.by_title[arg], {}
        else:  # an option value on the item page
            kind = next(k for k, v in self.item.options.items() if arg in v)
            self.chosen[kind] = arg
        truncated = not done and self.steps >= self.max_steps
        obs, info = self._obs()
        info["success"] = done and reward >= 1.0 - 1e-9
        return obs, reward, done, truncated, info


class Transition(NamedTuple):
    """One action on a page, with what the page showed and the reward it brought."""

    page: str
    observation: str
    admissible: tuple[str, ...]
    action: str
    reward: float


def expert_episode(env: ShopEnv, task: ShopTask) -> list[Transition]:
    """An annotated trajectory: the query whose results hold the purchase with the highest
    reward (the most specific such query), that product, the task's options it has, buy.

    Plays on ``env`` (reset to ``task``) and returns its transitions; used to seed the
    initial memories as REMEMBERER seeds its from annotated demonstrations.
    """
    obs, info = env.reset(options={"task": task})
    out: list[Transition] = []

    def act(action: str) -> None:
        nonlocal obs, info
        nobs, reward, _, _, ninfo = env.step(action)
        out.append(Transition(info["page"], obs, tuple(info["admissible"]), action, float(reward)))
        obs, info = nobs, ninfo

    def earned(p: Product) -> float:  # what buying p gets, with the options it has
        return shop_reward(
            task, p, {k: v for k, v in task.options.items() if v in p.options.get(k, ())}
        )

    # the query (most specific first) whose results hold the purchase with the best reward
    queries = sorted(
        task.queries, key=lambda q: (-len(set(q.split()) & set(task.instruction.split())), -len(q))
    )
    query, best = max(
        ((q, p) for q in queries for p in env.search(q)),
        key=lambda qp: (earned(qp[1]), -queries.index(qp[0]), qp[1].pid),
    )
    act(f"search[{query}]")
    act(f"click[{best.title}]")
    for kind, value in task.options.items():
        if value in best.options.get(kind, ()):
            act(f"click[{value}]")
    act("click[buy now]")
    return out


def expert_successes(env: ShopEnv, tasks: Sequence[ShopTask]) -> int:
    """On how many of ``tasks`` the expert's demonstration earns the full reward."""
    return sum(expert_episode(env, t)[-1].reward >= 1.0 - 1e-9 for t in tasks)
