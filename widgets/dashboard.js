// The eos-magics dashboard front-end (anywidget ES module; no CDN, no build step).
//
// The kernel sends numbers and short strings, not HTML: the frame (widgets/frame.py, flat keys to
// values) as diffs against what it sent last, in custom messages {op: "frame", set, del, full}; a
// new view asks for the whole frame with {op: "hello"}. This module keeps the frame, draws every
// panel from it (the markup of widgets/panels.py and widgets/svg.py, which still draw the static
// picture), redraws only the panels whose keys changed, and turns the controls and the fault
// buttons inside the panels into messages to the kernel:
//   model.send({op, node})   play, pause, step, step-request, live, crash, restart, pause-node,
//                            resume, drop-ack; fork, cancel (the answers to the question below)
//   model.set("scrub", i)    show the board after event i (-1: live)
//   model.set("rate", ms)    simulated ms per second while playing
//   model.set("msc_txn", id) the transactional id of the sequence chart
//   model.set("reads_tp", tp) the partition of the read_committed vs read_uncommitted panel
// While rewound, a click that changes the run makes the kernel set "confirm": the page shows its
// question with three buttons (fork here and act, cancel, go live) and nothing forks until the
// first is pressed. The scrubber takes the keyboard too: Left/Right one event, PageUp/PageDown
// ten, Home the first event, End live. Icons are characters of the DejaVu fonts, the only ones
// Debian's chromium has by default (the pause sign is two bars, U+275A): an emoji such as U+23F8
// is an empty box without an emoji font.
//
// Layout: nothing that changes with the state moves the slider. The head (event, time) and the
// rewound notice are one line of their own, clipped, the rewound notice in a slot that is always
// there; the buttons are one line that never wraps (the play button as wide as "pause"); the slider
// is a line of its own, full width; the notes are one clipped line below it. So a drag that leaves
// live keeps the slider under the pointer.
//
// The static picture: the kernel displays, under the dashboard, a picture of what it shows (HTML
// for saved notebooks and viewers, kept up to date by the kernel). While this view lives it hides
// that picture (a style rule for its class, "picture"), and shows it again when the view goes.

/** @typedef {import("./anywidget-types").RenderProps} RenderProps */
/** @typedef {import("./anywidget-types").AnyModel} AnyModel */

const PLAY = "▶ play";
const PAUSE = "❚❚ pause";

const PANELS = [
  ["brokers", "Brokers"],
  ["partitions", "Partitions"],
  ["producers", "Producers"],
  ["txns", "__transaction_state"],
  ["groups", "Consumer groups"],
  ["logs", "Partition logs"],
  ["reads", "read_committed vs read_uncommitted"],
  ["timeline", "Recent events"],
  ["msc", "Transaction sequence chart"],
];

/**
 * The panels with a picker in their title: the trait the picker sets, and its hover text.
 * @type {Record<string, [string, string]>}
 */
const PICKERS = {
  reads: ["reads_tp", "the partition whose reads are compared"],
  msc: ["msc_txn", "the transactional id whose latest transaction is drawn"],
};

/**
 * @param {string} tag
 * @param {string} cls
 * @param {string} [text]
 * @returns {HTMLElement}
 */
function el(tag, cls, text) {
  const e = document.createElement(tag);
  e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * @param {AnyModel} model
 * @param {string} op
 * @param {string} [node]
 */
function send(model, op, node) {
  model.send({ op: op, node: node || "" });
}

/** @type {Map<string, {style: HTMLStyleElement, views: number}>} */
const HIDDEN = new Map();

/**
 * Hide the static picture named ``name`` while a view of its dashboard lives; return the undo.
 * @param {string} name
 * @returns {() => void}
 */
function hidePicture(name) {
  if (!/^[\w-]+$/.test(name)) return () => {};
  let entry = HIDDEN.get(name);
  if (!entry) {
    const style = document.createElement("style");
    const cls = `.eos-picture-${name}`;
    style.textContent =
      `${cls} { display: none !important; }\n` +
      `.jp-OutputArea-child:has(${cls}), .output_area:has(${cls}) { display: none !important; }`;
    document.head.appendChild(style);
    entry = { style: style, views: 0 };
    HIDDEN.set(name, entry);
  }
  entry.views += 1;
  const held = entry;
  return () => {
    held.views -= 1;
    if (held.views === 0) {
      held.style.remove();
      HIDDEN.delete(name);
    }
  };
}

// -- drawing from the frame ------------------------------------------------------------------------
//
// The kernel sends the frame (widgets/frame.py: flat keys to numbers, short strings and short
// lists) as diffs; these functions draw each panel from it, the markup widgets/panels.py and
// widgets/svg.py write for the static picture (the same classes, texts and pictures).

/** @typedef {Record<string, any>} Frame */

const UNKNOWN = "—";
const FRESH_GREY = "#9aa0a6";
const HUES = [212, 28, 280, 160, 340, 95, 190, 250];
/** @type {Record<string, string>} */
const STATUS_CLS = { up: "eos-up", paused: "eos-paused", down: "eos-down" };
/** @type {Record<string, string>} */
const COLOURS = {
  plain: "#8a8f98",
  open: "#d39e00",
  committed: "#2e9d5e",
  aborted: "#d1493f",
  "commit-marker": "#2e9d5e",
  "abort-marker": "#d1493f",
};
/** @type {Record<string, string>} */
const KIND_LABELS = {
  plain: "non-transactional",
  open: "transaction open",
  committed: "committed",
  aborted: "aborted",
  "commit-marker": "COMMIT marker",
  "abort-marker": "ABORT marker",
};
const NO_PID = "no producer id yet (InitProducerId not answered)";
const NO_SEQ = "no sequence: the producer is not idempotent";

/**
 * @param {any} s
 * @returns {string}
 */
function esc(s) {
  return String(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#x27;");
}

/**
 * @param {number} n
 * @param {string} noun
 */
function counted(n, noun) {
  return n === 1 ? `${n} ${noun}` : `${n} ${noun}s`;
}

/**
 * @param {number} a
 * @param {number} b
 */
function range(a, b) {
  if (a < 0 || b < 0) return UNKNOWN;
  return a === b ? String(a) : `${a}..${b}`;
}

/**
 * @param {number} value
 * @param {string} why
 */
function known(value, why) {
  if (value >= 0) return String(value);
  return `<span class="eos-unknown" title="unknown: ${esc(why)}">${UNKNOWN}</span>`;
}

/** @param {string} status */
function statusSpan(status) {
  return `<span class="eos-status ${STATUS_CLS[status] || ""}">${esc(status)}</span>`;
}

/**
 * @param {string} cls
 * @param {string[]} headers
 * @param {string[]} rows
 * @param {string} empty
 */
function table(cls, headers, rows, empty) {
  const body = rows.join("");
  if (!body) return `<div class="eos-empty ${cls}">${esc(empty)}</div>`;
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  return `<table class="eos-table ${cls}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/**
 * @param {string} op
 * @param {string} node
 * @param {string} text
 * @param {string} title
 */
function button(op, node, text, title) {
  return `<button class="eos-act" data-op="${esc(op)}" data-node="${esc(node)}" title="${esc(title)}">${esc(text)}</button>`;
}

/** A batch's kind by its number in a packed tail (widgets/frame.py KINDS). */
const KINDS = ["plain", "open", "committed", "aborted", "commit-marker", "abort-marker"];
/** The numbers of one batch in a packed tail (widgets/frame.py BATCH_FIELDS). */
const BATCH_FIELDS = 6;

/**
 * A tail's batch as the drawing reads it, from its numbers in the packed tail (widgets/frame.py
 * ``_batch``: base offset, count, kind, producer id, epoch, base sequence or a marker's coordinator epoch):
 * [base, last, count, kind, producer id, epoch, base seq, last seq, control type, coordinator epoch, is control].
 * @param {ArrayLike<number>} p the packed tail
 * @param {number} i where the batch starts in it
 */
function batchRow(p, i) {
  const base = p[i];
  const count = p[i + 1];
  const kind = KINDS[p[i + 2]] || "plain";
  const x = p[i + 5];
  const control = kind === "commit-marker" || kind === "abort-marker";
  const bseq = control ? -1 : x;
  const lseq = bseq >= 0 ? bseq + count - 1 : -1;
  const ctype = control ? (kind === "commit-marker" ? "COMMIT" : "ABORT") : null;
  return [base, base + count - 1, count, kind, p[i + 3], p[i + 4], bseq, lseq, ctype, control ? x : -1, control];
}

/**
 * The numbers of a packed value: little-endian float64s (widgets/frame.py ``pack``).
 * @param {DataView} view
 * @returns {number[]}
 */
function unpack(view) {
  const out = [];
  for (let at = 0; at + 8 <= view.byteLength; at += 8) out.push(view.getFloat64(at, true));
  return out;
}

/** The frame's rows, by kind, in order. */
class View {
  /** @param {Frame} f */
  constructor(f) {
    this.f = f;
    /** @type {Set<string>} */
    this.fresh = new Set(f.fr || []);
    /** @type {Map<number, any[]>} */
    this.brokers = new Map((f["o:b"] || []).map((/** @type {number} */ id) => [id, f[`b:${id}`]]));
    /** @type {Array<{name: string, r: any[]}>} */
    this.partitions = (f["o:p"] || []).map((/** @type {string} */ n) => ({ name: n, r: f[`p:${n}`] }));
    /** @type {Array<{name: string, r: any[]}>} */
    this.producers = (f["o:pr"] || []).map((/** @type {string} */ n) => ({ name: n, r: f[`pr:${n}`] }));
    /** @type {Array<{name: string, r: any[]}>} */
    this.consumers = (f["o:c"] || []).map((/** @type {string} */ n) => ({ name: n, r: f[`c:${n}`] }));
    /** @type {Array<{name: string, r: any[]}>} */
    this.txns = (f["o:t"] || []).map((/** @type {string} */ n) => ({ name: n, r: f[`t:${n}`] }));
    /** @type {Array<{name: string, r: any[]}>} */
    this.groups = (f["o:g"] || []).map((/** @type {string} */ n) => ({ name: n, r: f[`g:${n}`] }));
    /** @type {Map<string, any[][]>} tp -> its tail's batches, oldest first (batchRow) */
    this.tails = new Map();
    for (const tp of f["o:l"] || []) {
      const packed = f[`lt:${tp}`] || [];
      const list = [];
      for (let i = 0; i + BATCH_FIELDS <= packed.length; i += BATCH_FIELDS) list.push(batchRow(packed, i));
      this.tails.set(tp, list);
    }
  }

  /**
   * @param {string} kind
   * @param {any} id
   */
  freshCls(kind, id) {
    return this.fresh.has(`${kind}:${id}`) ? " eos-fresh" : "";
  }

  /** @param {number} id */
  brokerStatus(id) {
    const b = this.brokers.get(id);
    return b ? b[0] : "";
  }

  /** @param {string} tp */
  partition(tp) {
    const p = this.partitions.find((x) => x.name === tp);
    return p ? p.r : undefined;
  }

  /**
   * Why a partition's LEO, HW and LSO are unknown ("" when known): panels.offsets_unknown.
   * @param {any[] | undefined} p
   */
  unknownWhy(p) {
    if (!p || p[6] >= 0) return "";
    const leader = p[2];
    if (leader < 0) return "the partition has no leader";
    const status = this.brokerStatus(leader);
    if (status === "down" || status === "paused") return `leader ${leader} is ${status}`;
    return `leader ${leader} has not loaded the partition`;
  }

  /** A hue per producer id, in the order ids first appear (panels.producer_palette). */
  palette() {
    /** @type {Map<number, number>} */
    const order = new Map();
    /** @param {number} pid */
    const see = (pid) => {
      if (pid >= 0 && !order.has(pid)) order.set(pid, HUES[order.size % HUES.length]);
    };
    for (const p of this.producers) see(p.r[2]);
    for (const t of this.txns) see(t.r[2]);
    for (const list of this.tails.values()) for (const b of list) see(b[4]);
    return order;
  }

  /** The fenced (producer id, epoch) pairs, as "pid:epoch" (panels.fenced_epochs). */
  fenced() {
    /** @type {Map<string, any[]>} */
    const coordinator = new Map(this.txns.map((t) => [t.name, t.r]));
    /** @type {Set<string>} */
    const out = new Set();
    for (const { r } of this.producers) {
      const [, tid, pid, epoch, state, error] = r;
      if (pid < 0) continue;
      if (error === "ProducerFencedException" || error === "InvalidProducerEpochException") {
        out.add(`${pid}:${epoch}`);
        continue;
      }
      const t = tid ? coordinator.get(tid) : undefined;
      const ending = state === "COMMITTING_TRANSACTION" || state === "ABORTING_TRANSACTION";
      if (t && !ending && (t[2] > pid || (t[2] === pid && t[3] > epoch))) out.add(`${pid}:${epoch}`);
    }
    return out;
  }
}

/**
 * @param {number} pid
 * @param {number} epoch
 * @param {Map<number, number>} hues
 * @param {Set<string>} fenced
 */
function batchColour(pid, epoch, hues, fenced) {
  if (pid < 0) return COLOURS.plain;
  if (fenced.has(`${pid}:${epoch}`)) return FRESH_GREY;
  const hue = hues.get(pid) || 0;
  const lightness = [38, 50, 62, 44, 56][((epoch % 5) + 5) % 5];
  return `hsl(${hue},62%,${lightness}%)`;
}

/**
 * @param {number[]} ids
 * @param {number} [most]
 */
function few(ids, most = 6) {
  if (!ids.length) return "-";
  const full = ids.join(", ");
  if (ids.length <= most) return full;
  return `<span title="${full}">${ids.length}: ${ids.slice(0, most).join(", ")}, …</span>`;
}

/** @param {View} v */
function brokersPanel(v) {
  const rows = [];
  for (const [id, b] of v.brokers) {
    const [status, fenced, txnParts, groupParts] = b;
    const node = `broker-${id}`;
    let acts;
    if (status === "down") acts = button("restart", node, "restart", `restart ${node}: it rebuilds from its disk`);
    else if (status === "paused") acts = button("resume", node, "resume", `resume ${node}`);
    else
      acts =
        button("crash", node, "crash", `crash ${node}: volatile state lost`) +
        button("pause", node, "pause", `pause ${node}: it stops while time goes on`);
    rows.push(
      `<tr class="eos-broker${v.freshCls("broker", id)}" data-node="${node}">` +
        `<td>${node}</td><td>${statusSpan(status)}${fenced ? " fenced" : ""}</td>` +
        `<td>${few(txnParts)}</td><td>${few(groupParts)}</td><td>${acts}</td></tr>`,
    );
  }
  rows.push(`<tr><td>controller</td><td>${statusSpan(v.f.ctl || "")}</td><td></td><td></td><td></td></tr>`);
  return table(
    "eos-brokers",
    ["node", "status", "txn coordinator of", "group coordinator of", "faults"],
    rows,
    "no brokers",
  );
}

/** @param {number[]} ids */
function idList(ids) {
  return `[${ids.join(",")}]`;
}

/** @param {View} v */
function partitionsPanel(v) {
  const rows = [];
  for (const { name, r } of v.partitions) {
    const [topic, , leader, epoch, isr, replicas, leo, hw, lso] = r;
    const why = v.unknownWhy(r);
    const lag = hw >= 0 && lso >= 0 ? hw - lso : 0;
    let lsoCell = known(lso, why) + (lag ? ` <span class="eos-note">(HW-${lag})</span>` : "");
    if (why) lsoCell += ` <span class="eos-note">(${esc(why)})</span>`;
    let leaderCell = known(leader, why);
    const ls = leader >= 0 ? v.brokerStatus(leader) : "";
    if (ls === "down" || ls === "paused") leaderCell += " " + statusSpan(ls);
    void topic;
    rows.push(
      `<tr class="eos-partition${v.freshCls("partition", name)}" data-tp="${esc(name)}">` +
        `<td>${esc(name)}</td><td>${leaderCell}</td><td>${known(epoch, why)}</td>` +
        `<td>${idList(isr)}</td><td>${idList(replicas)}</td>` +
        `<td class="eos-leo">${known(leo, why)}</td><td class="eos-hw">${known(hw, why)}</td>` +
        `<td class="eos-lso">${lsoCell}</td></tr>`,
    );
  }
  return table("eos-partitions", ["partition", "leader", "epoch", "ISR", "replicas", "LEO", "HW", "LSO"], rows, "no topics yet");
}

/**
 * @param {View} v
 * @param {any[]} p
 * @param {number} pid
 */
function windowCell(v, p, pid) {
  const why = v.unknownWhy(p);
  if (why) return known(-1, `${why}: the window lives on the leader`);
  for (const [epid, window] of p[9]) {
    if (epid !== pid) continue;
    const slots = window.map(
      (/** @type {number[]} */ w) =>
        `<span class="eos-slot" title="cached on the leader: sequences ${range(w[0], w[1])} at offset ${w[2]}">${range(w[0], w[1])}</span>`,
    );
    for (let i = window.length; i < 5; i++) slots.push('<span class="eos-slot eos-slot-empty"></span>');
    return slots.join("");
  }
  return "";
}

/**
 * @param {string} status
 * @param {string} node
 */
function producerButtons(status, node) {
  if (status === "down" || status === "outside") return "";
  if (status === "paused") return button("resume", node, "resume", `resume ${node}: the zombie wakes up and tries to go on`);
  return (
    button("pause", node, "pause (zombie)", `pause ${node}: it stalls while time goes on, a zombie`) +
    button("drop-ack", node, "drop next ack", `drop the next ProduceResponse to ${node}: it must retry`) +
    button("crash", node, "crash", `crash ${node}: what it had not delivered is lost`)
  );
}

/** @param {View} v */
function producersPanel(v) {
  const hues = v.palette();
  const zombies = v.fenced();
  const blocks = [];
  for (const { name, r } of v.producers) {
    const [status, tid, pid, epoch, state, error, parts] = r;
    const colour = batchColour(pid, epoch, hues, zombies);
    const fenced = zombies.has(`${pid}:${epoch}`);
    const head =
      `<div class="eos-producer-head"><span class="eos-swatch" style="background:${colour}"></span>` +
      `<b>${esc(name)}</b> ${statusSpan(status)}` +
      `<span class="eos-kv">tx id <b>${esc(tid || "-")}</b></span>` +
      `<span class="eos-kv">producer id <b class="eos-pid">${known(pid, NO_PID)}</b></span>` +
      `<span class="eos-kv">epoch <b class="eos-epoch">${known(epoch, NO_PID)}</b></span>` +
      `<span class="eos-kv">state <b class="eos-state">${esc(state)}</b></span>` +
      (fenced ? ' <span class="eos-fenced">zombie: a newer epoch exists</span>' : "") +
      (error ? ` <span class="eos-error">${esc(error)}</span>` : "") +
      `<span class="eos-acts">${producerButtons(status, name)}</span></div>`;
    const rows = [];
    for (const [topic, partition, nextSeq, lastAcked, inFlight, queued] of parts) {
      const flight = inFlight
        .map(
          (/** @type {number[]} */ f) =>
            `<span class="eos-inflight" title="sent ${f[2]} time(s), no answer yet">${range(f[0], f[1])}${f[2] > 1 ? "×" + f[2] : ""}</span>`,
        )
        .join(" ");
      const p = v.partition(`${topic}-${partition}`);
      const window = p ? windowCell(v, p, pid) : "";
      rows.push(
        `<tr><td>${esc(topic)}-${partition}</td><td>${known(nextSeq, NO_SEQ)}</td>` +
          `<td>${known(lastAcked, "none acknowledged yet")}</td>` +
          `<td>${flight || "-"}</td><td>${queued}</td><td>${window}</td></tr>`,
      );
    }
    const tbl = table(
      "eos-producer-parts",
      ["partition", "next seq", "last acked", "in flight", "queued", "leader's dedup window (5 batches)"],
      rows,
      "nothing sent yet",
    );
    blocks.push(`<div class="eos-producer${v.freshCls("producer", name)}" data-node="${esc(name)}">${head}${tbl}</div>`);
  }
  return blocks.join("") || '<div class="eos-empty">no producers yet</div>';
}

/** @param {View} v */
function txnsPanel(v) {
  const rows = [];
  for (const { name, r } of v.txns) {
    const [coordinator, txnPartition, pid, epoch, state, pending, parts, timeout, lastUpdate] = r;
    const pend = pending ? ` <span class="eos-note">→ ${esc(pending)}</span>` : "";
    const ps = parts.map((/** @type {any[]} */ x) => `${esc(x[0])}-${x[1]}`).join(", ") || "-";
    rows.push(
      `<tr class="eos-txn${v.freshCls("txn", name)}" data-txn="${esc(name)}"><td>${esc(name)}</td>` +
        `<td>${coordinator}</td><td>${txnPartition}</td><td>${known(pid, NO_PID)}</td>` +
        `<td class="eos-epoch">${known(epoch, NO_PID)}</td>` +
        `<td class="eos-state">${esc(state)}${pend}</td>` +
        `<td>${ps}</td><td>${timeout}</td><td>${lastUpdate}</td></tr>`,
    );
  }
  return table(
    "eos-txns",
    [
      "transactional id",
      "coordinator",
      "__transaction_state",
      "producer id",
      "epoch",
      "state",
      "partitions",
      "timeout ms",
      "last update ms",
    ],
    rows,
    "no transactional ids yet (init_transactions writes the first entry)",
  );
}

/** @param {View} v */
function groupsPanel(v) {
  const rows = [];
  for (const { name, r } of v.groups) {
    const [coordinator, protocol, state, generation, target, members, lag] = r;
    let gen;
    if (protocol === "consumer") {
      gen = `epoch ${generation}`;
      if (target !== null && target !== generation) gen += ` <span class="eos-note">target ${target}</span>`;
    } else gen = `generation ${generation}`;
    const ms = members
      .map(
        (/** @type {any[]} */ m) =>
          esc(m[0]) + (m[1] !== null ? ` <span class="eos-epoch">e${m[1]}</span>` : "") + `: ${esc(m[2])}`,
      )
      .join("<br>");
    rows.push(
      `<tr class="eos-group${v.freshCls("group", name)}" data-group="${esc(name)}">` +
        `<td>${esc(name)}</td><td>${coordinator}</td><td>${esc(protocol)}</td>` +
        `<td class="eos-state">${esc(state)}</td><td>${gen}</td>` +
        `<td>${ms || "-"}</td><td>${lag === null ? "-" : lag}</td></tr>`,
    );
  }
  return table(
    "eos-groups",
    ["group", "coordinator", "protocol", "state", "generation / epoch", "members: assignment", "lag"],
    rows,
    "no consumer groups yet (a consumer with a group.id joins or commits the first)",
  );
}

// A batch of a tail, as View.tails holds it.
const B_BASE = 0;
const B_LAST = 1;
const B_COUNT = 2;
const B_KIND = 3;
const B_PID = 4;
const B_EPOCH = 5;
const B_BSEQ = 6;
const B_LSEQ = 7;
const B_CTYPE = 8;
const B_CEPOCH = 9;
const B_CONTROL = 10;

/**
 * The read_uncommitted and read_committed views of one partition (panels.reads_panel).
 * @param {View} v
 */
function readsPanel(v) {
  const chosen = String(v.f.rtp || "");
  let target = chosen ? v.partitions.find((p) => p.name === chosen) : undefined;
  if (!target) target = v.partitions.find((p) => p.r[6] > 0) || v.partitions[0];
  if (!target) return '<div class="eos-empty">no topics yet</div>';
  const name = target.name;
  const [topic, partition, , , , , , hw, lso] = target.r;
  const summaries = v.tails.get(name) || [];
  const ru = summaries.filter((b) => !b[B_CONTROL] && b[B_BASE] < hw);
  const rc = summaries.filter((b) => !b[B_CONTROL] && b[B_LAST] < lso && b[B_KIND] !== "aborted");
  let hiddenAborted = 0;
  let heldOpen = 0;
  for (const b of summaries) {
    if (b[B_KIND] === "aborted" && b[B_LAST] < hw) hiddenAborted += b[B_COUNT];
    if (b[B_KIND] === "open") heldOpen += b[B_COUNT];
  }
  const why = v.unknownWhy(target.r);
  /**
   * @param {string} title
   * @param {string} cls
   * @param {any[][]} batches
   * @param {string} cursor
   * @param {number} offset
   * @param {string} note
   */
  const side = (title, cls, batches, cursor, offset, note) => {
    const cells = batches
      .slice(-24)
      .map(
        (b) =>
          `<span class="eos-rec eos-${b[B_KIND]}" title="offsets ${range(b[B_BASE], b[B_LAST])} · ${b[B_KIND]}">` +
          `${range(b[B_BASE], b[B_LAST])}</span>`,
      )
      .join("");
    let count;
    let bound;
    if (why) {
      count = known(-1, why);
      bound = `${cursor} ${UNKNOWN} (${esc(why)})`;
      note = "nothing readable now";
    } else {
      count = String(batches.reduce((n, b) => n + b[B_COUNT], 0));
      bound = `${cursor} ${offset}`;
    }
    const records = count === "1" ? "record" : "records";
    return (
      `<div class="eos-read ${cls}"><div class="eos-caption">${title}</div>` +
      `<div class="eos-read-count"><b>${count}</b> ${records} readable, up to ${bound}</div>` +
      `<div class="eos-recs">${cells || "-"}</div><div class="eos-note">${note}</div></div>`
    );
  };
  const left = side("read_uncommitted", "eos-ru", ru, "HW", hw, "sees open and aborted transactions' records too");
  const right = side(
    "read_committed",
    "eos-rc",
    rc,
    "LSO",
    lso,
    `${counted(hiddenAborted, "aborted record")} skipped; ${counted(heldOpen, "record")} of open transactions held back`,
  );
  /**
   * @param {number} offset
   * @param {number} pos
   */
  const lagTo = (offset, pos) => {
    if (pos < 0) return known(pos, "no position yet");
    return offset < 0 ? known(offset, why) : String(Math.max(0, offset - pos));
  };
  const lagRows = [];
  for (const { name: cname, r } of v.consumers) {
    const [isolation, positions] = r;
    for (const [t, p, pos] of positions) {
      if (t !== topic || p !== partition) continue;
      const bound = isolation === "read_committed" ? lso : hw;
      lagRows.push(
        `<tr><td>${esc(cname)}</td><td>${esc(isolation)}</td>` +
          `<td>${known(pos, "no position yet")}</td><td>${lagTo(hw, pos)}</td>` +
          `<td>${lagTo(lso, pos)}</td><td>${lagTo(bound, pos)}</td></tr>`,
      );
    }
  }
  const lag = table(
    "eos-lag",
    ["consumer", "isolation.level", "position", "lag to HW", "lag to LSO", "can read now"],
    lagRows,
    `no consumer reads ${name} yet`,
  );
  return `<div class="eos-reads" data-tp="${esc(name)}"><div class="eos-side">${left}${right}</div>${lag}</div>`;
}

/** @type {Record<string, string>} */
const EV_CLS = { fault: " eos-ev-fault", drop: " eos-ev-drop", phase: " eos-ev-phase" };

/**
 * The recent events over a time axis with the fault windows (panels.timeline_panel).
 * @param {Frame} f
 */
function timelinePanel(f) {
  const tl = f.tl;
  if (!tl) return '<div class="eos-empty">no events yet</div>';
  const [first, index, t0, t1] = tl;
  const rows = [];
  for (let i = first; i <= index; i++) {
    const e = f[`e:${i}`];
    if (!e) continue;
    const cls = (EV_CLS[e[0]] || "") + (e[1] ? " eos-ev-txn" : "");
    rows.push(`<div class="eos-ev${cls}" data-index="${i}">${esc(e[2])}</div>`);
  }
  return `<div class="eos-timeline">${axisSvg(t0, t1, f.fw || [])}<div class="eos-evs">${rows.join("")}</div></div>`;
}

/**
 * @param {number} t0
 * @param {number} t1
 * @param {any[][]} windows
 */
function axisSvg(t0, t1, windows) {
  const width = 640;
  const row = 14;
  const height = 22 + row * Math.max(1, windows.length);
  const span = Math.max(1, t1 - t0);
  /** @param {number} t */
  const x = (t) => 8 + Math.floor(((Math.min(Math.max(t, t0), t1) - t0) * (width - 16)) / span);
  const body = [
    `<line x1="8" y1="14" x2="${width - 8}" y2="14" stroke="currentColor" stroke-opacity="0.5"/>`,
    `<text x="8" y="10" font-size="9" fill="currentColor">${t0} ms</text>`,
    `<text x="${width - 8}" y="10" font-size="9" text-anchor="end" fill="currentColor">${t1} ms</text>`,
  ];
  windows.forEach(([node, fault, start, end], i) => {
    const y = 20 + i * row;
    const x0 = x(start);
    const x1 = x(end !== null ? end : t1);
    const label = `${node} ${fault} ${start}..${end !== null ? end : "now"} ms`;
    body.push(
      `<g><title>${esc(label)}</title><rect x="${x0}" y="${y}" width="${Math.max(2, x1 - x0)}" height="${row - 3}" ` +
        `fill="#d1493f" fill-opacity="0.25" stroke="#d1493f"/>` +
        `<text x="${x0 + 3}" y="${y + row - 5}" font-size="9" fill="currentColor">${esc(node + " " + fault)}</text></g>`,
    );
  });
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="eos-axis" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" style="max-width:100%;height:auto;display:block">${body.join("")}</svg>`
  );
}

// -- the log strip (widgets/svg.py log_strip) --------------------------------------------------------

const FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const CHAR_W = 6;
const PAD = 8;
const BOX_H = 34;
const UNIT = 12;
const MIN_W = 20;
const MAX_W = 160;
const MAX_STRIP_W = 880;
const NOTE_W = 150;
const LABEL_ROW_H = 13;
const LABEL_GAP = 8;
const MAX_BATCHES = 30;
/** @type {Record<string, string | null>} */
const CURSOR_DASH = { LSO: "5 3", HW: null, LEO: "2 2" };
/** @type {Record<string, string>} */
const CURSOR_MEANING = {
  LSO: "LSO: last stable offset, read_committed consumers read below it",
  HW: "HW: high watermark, replicated to the ISR; read_uncommitted consumers read below it",
  LEO: "LEO: log end offset, where the next record goes",
};

/**
 * @param {string} tag
 * @param {Array<[string, any]>} pairs
 * @param {string} [body]
 */
function svgEl(tag, pairs, body) {
  const attrs = pairs
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => ` ${k}="${esc(v)}"`)
    .join("");
  return body ? `<${tag}${attrs}>${body}</${tag}>` : `<${tag}${attrs}/>`;
}

/**
 * @param {number} x
 * @param {number} y
 * @param {string} s
 * @param {Array<[string, any]>} [extra]
 * @param {string} [anchor]
 * @param {number} [size]
 */
function svgText(x, y, s, extra = [], anchor = "start", size = 10) {
  return svgEl(
    "text",
    [["x", x], ["y", y], ["text-anchor", anchor], ["font-size", size], ["fill", "currentColor"], ...extra],
    esc(s),
  );
}

/**
 * @param {number} first
 * @param {number} last
 */
function srange(first, last) {
  return first === last ? String(first) : `${first}..${last}`;
}

/**
 * @param {number} x
 * @param {number} y
 * @param {number} w
 * @param {number} h
 * @param {string} colour
 * @param {number} [step]
 */
function hatch(x, y, w, h, colour, step = 6) {
  const out = [];
  for (let c = -h + Math.floor(step / 2); c < w; c += step) {
    const lo = Math.max(0, -c);
    const hi = Math.min(h, w - c);
    if (lo < hi)
      out.push(
        svgEl("line", [
          ["x1", x + c + lo],
          ["y1", y + h - lo],
          ["x2", x + c + hi],
          ["y2", y + h - hi],
          ["stroke", colour],
          ["stroke-width", 1],
          ["stroke-opacity", "0.7"],
        ]),
      );
  }
  return out;
}

/** @param {any[][]} batches */
function widths(batches) {
  const natural = batches.map((b) => (b[B_CONTROL] ? MIN_W : Math.min(MAX_W, Math.max(MIN_W, UNIT * b[B_COUNT]))));
  const total = natural.reduce((a, b) => a + b, 0);
  let room = MAX_STRIP_W - MIN_W * natural.length;
  const extra = total - MIN_W * natural.length;
  if (total <= MAX_STRIP_W || extra <= 0) return natural;
  room = Math.max(room, 0);
  return natural.map((w) => MIN_W + Math.floor(((w - MIN_W) * room) / extra));
}

/** @param {any[]} b */
function batchTitle(b) {
  if (b[B_CONTROL])
    return (
      `offset ${b[B_BASE]}: ${b[B_CTYPE]} marker · producer ${b[B_PID]} epoch ${b[B_EPOCH]}` +
      ` · coordinator epoch ${b[B_CEPOCH]}`
    );
  const parts = [`offsets ${srange(b[B_BASE], b[B_LAST])} (${counted(b[B_COUNT], "record")})`];
  if (b[B_PID] >= 0) parts.push(`producer ${b[B_PID]} epoch ${b[B_EPOCH]}`);
  if (b[B_BSEQ] >= 0) parts.push(`sequences ${srange(b[B_BSEQ], b[B_LSEQ])}`);
  const kind = b[B_KIND];
  parts.push((KIND_LABELS[kind] || kind) + (kind === "committed" || kind === "aborted" ? " transaction" : ""));
  return parts.join(" · ");
}

/**
 * @param {any[]} b
 * @param {number} x
 * @param {number} y
 * @param {number} w
 * @param {(b: any[]) => string} fill
 */
function box(b, x, y, w, fill) {
  let colour = COLOURS[b[B_KIND]] || COLOURS.plain;
  if (!b[B_CONTROL]) colour = fill(b);
  const out = ["<g>", `<title>${esc(batchTitle(b))}</title>`];
  /** @type {Array<[string, any]>} */
  const rect = [["x", x], ["y", y], ["width", w], ["height", BOX_H], ["rx", 2], ["fill", colour], ["stroke", colour]];
  if (b[B_CONTROL]) {
    out.push(svgEl("rect", [...rect, ["fill-opacity", "0.85"]]));
    const glyph = b[B_CTYPE] === "COMMIT" ? "✓" : "✗";
    out.push(
      svgEl(
        "text",
        [
          ["x", x + Math.floor(w / 2)],
          ["y", y + Math.floor(BOX_H / 2) + 5],
          ["text-anchor", "middle"],
          ["font-size", 14],
          ["font-weight", "bold"],
          ["fill", "#ffffff"],
        ],
        glyph,
      ),
    );
  } else {
    out.push(
      svgEl("rect", [
        ...rect,
        ["fill-opacity", b[B_KIND] === "aborted" ? "0.22" : "0.35"],
        ["stroke-width", 1.5],
        ["stroke-dasharray", b[B_KIND] === "open" ? "4 3" : null],
      ]),
    );
    if (b[B_KIND] === "aborted") out.push(...hatch(x, y, w, BOX_H, colour));
    if (b[B_PID] >= 0) {
      const label = `p${b[B_PID]} e${b[B_EPOCH]}`;
      if (w >= CHAR_W * label.length + 4)
        out.push(svgText(x + Math.floor(w / 2), y + Math.floor(BOX_H / 2) + 4, label, [], "middle", 9));
    }
  }
  out.push("</g>");
  return out;
}

/**
 * One partition's log strip, as svg.log_strip draws it with the dashboard's colours.
 * @param {any[][]} all the tail's batches, oldest first
 * @param {number} hw
 * @param {number} lso
 * @param {number | null} logEnd
 * @param {string} label
 * @param {(b: any[]) => string} fill
 * @param {Array<[string, string]>} legend
 * @param {string} unknown
 */
function logStrip(all, hw, lso, logEnd, label, fill, legend, unknown) {
  const hidden = Math.max(0, all.length - MAX_BATCHES);
  const shown = all.slice(hidden);
  const leo = logEnd !== null ? logEnd : all.length ? all[all.length - 1][B_LAST] + 1 : 0;
  /** @type {Array<[string, number]>} */
  const named = [
    ["LSO", lso],
    ["HW", hw],
    ["LEO", leo],
  ];
  /** @type {Map<number, string[]>} */
  const byOffset = new Map();
  for (const [n, o] of named) if (o >= 0) byOffset.set(o, [...(byOffset.get(o) || []), n]);
  const groups = [...byOffset.entries()].sort((a, b) => a[0] - b[0]);
  const missing = named.filter(([, o]) => o < 0).map(([n]) => n);
  const left = PAD + (hidden ? NOTE_W : 0);
  const ws = widths(shown);
  /** @type {number[]} */
  const xs = [];
  let x = left;
  for (const w of ws) {
    xs.push(x);
    x += w;
  }
  const right = shown.length ? x : left + 120;
  /** @param {number} offset */
  const offsetX = (offset) => {
    if (!shown.length || offset <= shown[0][B_BASE]) return left;
    for (let i = 0; i < shown.length; i++) {
      const b = shown[i];
      if (b[B_BASE] <= offset && offset <= b[B_LAST])
        return xs[i] + Math.floor(((offset - b[B_BASE]) * ws[i]) / Math.max(1, b[B_COUNT]));
    }
    return right;
  };
  const body = [];
  /** @type {Array<[string, number, number, string[], number]>} */
  const placed = [];
  let row = 0;
  let rowEnd = -LABEL_GAP;
  for (const [offset, names] of groups) {
    let text = names.join("=") + ` ${offset}`;
    const cx = offsetX(offset);
    if (hidden && offset < shown[0][B_BASE]) text = "◂" + text;
    if (placed.length && cx < rowEnd + LABEL_GAP) row += 1;
    rowEnd = cx + 3 + CHAR_W * text.length;
    placed.push([text, cx, cx + 3, names, row]);
  }
  let width = Math.max(right, ...placed.map(([t, , tx]) => tx + CHAR_W * t.length + 4), 240) + PAD;
  const top = PAD + LABEL_ROW_H * (row + 1) + 4;
  if (hidden) {
    const note = `… ${hidden} earlier batch${hidden !== 1 ? "es" : ""}`;
    body.push(svgText(PAD, top + Math.floor(BOX_H / 2) + 4, note, [["fill-opacity", "0.7"]]));
  }
  if (shown.length) {
    shown.forEach((b, i) => {
      body.push(...box(b, xs[i], top, ws[i], fill));
      const base = String(b[B_BASE]);
      if (ws[i] >= CHAR_W * base.length + 2)
        body.push(svgText(xs[i] + 2, top + BOX_H + 12, base, [["fill-opacity", "0.8"]], "start", 9));
    });
  } else {
    body.push(
      svgEl("rect", [
        ["x", left],
        ["y", top],
        ["width", right - left],
        ["height", BOX_H],
        ["fill", "none"],
        ["stroke", "currentColor"],
        ["stroke-opacity", "0.4"],
        ["stroke-dasharray", "3 3"],
      ]),
    );
    body.push(svgText(left + Math.floor((right - left) / 2), top + Math.floor(BOX_H / 2) + 4, "empty log", [], "middle"));
  }
  for (const [text, cx, tx, names, r] of placed) {
    const yLabel = PAD + LABEL_ROW_H * (r + 1) - 2;
    body.push("<g>", `<title>${esc(names.map((n) => CURSOR_MEANING[n]).join(", "))}</title>`);
    body.push(
      svgEl("line", [
        ["x1", cx],
        ["y1", yLabel - 9],
        ["x2", cx],
        ["y2", top + BOX_H + 3],
        ["stroke", "currentColor"],
        ["stroke-width", 1.5],
        ["stroke-dasharray", CURSOR_DASH[names[0]]],
      ]),
    );
    body.push(svgText(tx, yLabel, text), "</g>");
  }
  if (missing.length) {
    const said = missing.join(", ") + " unknown" + (unknown ? `: ${unknown}` : "");
    body.push(svgText(right + 10, top + Math.floor(BOX_H / 2) + 4, said));
    width = Math.max(width, right + 10 + CHAR_W * said.length + PAD);
  }
  const present = Object.keys(COLOURS).filter((k) => shown.some((b) => b[B_KIND] === k));
  const yLegend = top + BOX_H + 28;
  let lx = PAD;
  /**
   * @param {string} text
   * @param {Array<[string, any]>} style
   */
  const legendItem = (text, style) => {
    body.push(svgEl("rect", [["x", lx], ["y", yLegend - 9], ["width", 10], ["height", 10], ...style]));
    body.push(svgText(lx + 14, yLegend, text, [], "start", 9));
    lx = lx + 14 + CHAR_W * text.length + 12;
  };
  for (const k of present) {
    const marker = k.endsWith("marker");
    const colour = marker ? COLOURS[k] : "currentColor";
    const opacity = marker ? "0.85" : k === "aborted" ? "0.22" : "0.35";
    const dashes = k === "open" ? "2 2" : null;
    if (k === "aborted") body.push(...hatch(lx, yLegend - 9, 10, 10, colour, 4));
    legendItem(KIND_LABELS[k], [
      ["fill", colour],
      ["fill-opacity", opacity],
      ["stroke", colour],
      ["stroke-dasharray", dashes],
    ]);
  }
  for (const [colour, text] of legend)
    legendItem(text, [
      ["fill", colour],
      ["stroke", colour],
    ]);
  width = Math.max(width, lx + PAD);
  const height = present.length ? yLegend + 8 : top + BOX_H + 20;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
    `role="img" font-family="${FONT}" font-size="10" style="max-width:100%;height:auto;display:block">` +
    `<title>${esc(label)}</title>${body.join("")}</svg>`
  );
}

/** @param {View} v */
function logsPanel(v) {
  const hues = v.palette();
  const zombies = v.fenced();
  /** @type {Array<[string, string]>} */
  const legend = [...hues.entries()].map(([pid, h]) => [`hsl(${h},62%,50%)`, `producer ${pid}`]);
  let zombieShown = false;
  for (const list of v.tails.values())
    for (const b of list) if (zombies.has(`${b[B_PID]}:${b[B_EPOCH]}`)) zombieShown = true;
  if (zombieShown) legend.push([FRESH_GREY, "fenced epoch (zombie)"]);
  /** @param {any[]} b */
  const fill = (b) => batchColour(b[B_PID], b[B_EPOCH], hues, zombies);
  const strips = [];
  for (const [tp, batches] of v.tails) {
    const p = v.partition(tp);
    const why = p ? v.unknownWhy(p) : "";
    const label = `log of ${tp} on its leader` + (why ? ` (${why}: read from its disk)` : "");
    const picture = logStrip(batches, p ? p[7] : -1, p ? p[8] : -1, p ? p[6] : null, label, fill, legend, why);
    strips.push(`<div class="eos-strip" data-tp="${esc(tp)}"><div class="eos-caption">${esc(tp)}</div>${picture}</div>`);
  }
  return strips.join("") || '<div class="eos-empty">no topics yet</div>';
}

// -- the sequence chart (widgets/sequence_svg.py) ------------------------------------------------------

const MSC_WIDTH = 800;
const GAP_MS = 1000;
/** @type {Record<string, string>} */
const API_COLOURS = {
  FindCoordinator: "#888888",
  InitProducerId: "#cc79a7",
  AddPartitionsToTxn: "#e69f00",
  Produce: "#0072b2",
  AddOffsetsToTxn: "#009e73",
  TxnOffsetCommit: "#56b4e9",
  EndTxn: "#d55e00",
  WriteTxnMarkers: "#000000",
};
/** @type {Record<string, string>} */
const NOTE_FILL = {
  "txn_state.write": "#fff3c4",
  "txn.complete": "#d9f2d9",
  "marker.append": "#eadcf0",
  "marker.rejected": "#f8d0d0",
  "produce.failed": "#f8d0d0",
  "txn_offset_commit.pending": "#dff0f7",
  "txn_offset_commit.completed": "#dff0f7",
};
const ROW = 18;
const GAP_ROW = 24;
const TIME_X = 54;
const LANE_LEFT = 130;
const LANE_RIGHT = MSC_WIDTH - 80;
const CHAR_PX = 5.6;
const LOOP_PX = 36;

/** @param {string} api */
function apiColour(api) {
  return API_COLOURS[api] || "#555555";
}

/**
 * Where lanes and rows are (sequence_svg._Layout).
 * @param {any} c the chart's values (sequence_svg.chart_values)
 */
function mscLayout(c) {
  const n = c.lanes.length;
  const step = n > 1 ? Math.floor((LANE_RIGHT - LANE_LEFT) / (n - 1)) : 0;
  const start = n > 1 ? LANE_LEFT : Math.floor(MSC_WIDTH / 2);
  /** @type {Record<string, number>} */
  const x = {};
  c.lanes.forEach((/** @type {any[]} */ lane, /** @type {number} */ i) => {
    x[lane[0]] = start + i * step;
  });
  const headerLines = Math.max(1, ...c.lanes.map((/** @type {any[]} */ l) => l[1].length));
  const top = 58 + 11 * headerLines + 16;
  /** @type {Map<number, number>} */
  const times = new Map();
  for (const a of c.arrows) {
    times.set(a[0], a[9]);
    if (a[1] !== null && a[10] !== null) times.set(a[1], a[10]);
  }
  for (const note of c.notes) times.set(note[0], note[1]);
  /** @type {Map<number, number>} */
  const y = new Map();
  /** @type {Array<[number, number]>} */
  const timeLabels = [];
  /** @type {Array<[number, number]>} */
  const gaps = [];
  let row = top;
  /** @type {number | null} */
  let lastMs = null;
  for (const index of [...times.keys()].sort((a, b) => a - b)) {
    const ms = /** @type {number} */ (times.get(index));
    if (lastMs !== null && ms - lastMs > GAP_MS) {
      gaps.push([row - Math.floor(ROW / 2) + Math.floor(GAP_ROW / 2), ms - lastMs]);
      row += GAP_ROW;
    }
    if (ms !== lastMs) timeLabels.push([row, ms]);
    y.set(index, row);
    lastMs = ms;
    row += ROW;
  }
  const inFlight = c.arrows.some((/** @type {any[]} */ a) => a[1] === null);
  return { x, y, top, timeLabels, gaps, endRow: inFlight ? row : null, bottom: row + (inFlight ? ROW : 0) };
}

/** @param {any[]} a */
function arrowHover(a) {
  const [sendIndex, endIndex, msgId, src, dst, , msg, , , sendMs, endMs, deliverMs, drop, replyTo, detail] = a;
  let fate;
  if (drop !== null) fate = `dropped at ${endMs} ms (trace #${endIndex}): ${drop}`;
  else if (deliverMs === null) fate = "still in flight when the trace ends";
  else fate = `delivered at ${deliverMs} ms (trace #${endIndex})`;
  const lines = [`${msg} ${src} -> ${dst} (message id ${msgId})`, `sent at ${sendMs} ms (trace #${sendIndex}); ${fate}`];
  if (replyTo !== null) lines.push(`answers the request sent at trace #${replyTo}`);
  if (detail) lines.push(detail);
  return lines.join("\n");
}

/**
 * @param {number} x1
 * @param {number} y1
 * @param {number} x2
 * @param {number} y2
 * @param {string} colour
 */
function arrowHead(x1, y1, x2, y2, colour) {
  const dx = x2 - x1;
  const dy = y2 - y1;
  const length = Math.sqrt(dx * dx + dy * dy) || 1.0;
  const ux = dx / length;
  const uy = dy / length;
  const bx = x2 - 8 * ux;
  const by = y2 - 8 * uy;
  const px = -uy * 3.5;
  const py = ux * 3.5;
  const f = (/** @type {number} */ v) => v.toFixed(1);
  return `<polygon points="${f(x2)},${f(y2)} ${f(bx + px)},${f(by + py)} ${f(bx - px)},${f(by - py)}" fill="${colour}"/>`;
}

/**
 * One arrow's group and its label (sequence_svg._arrow).
 * @param {any[]} a
 * @param {ReturnType<typeof mscLayout>} L
 * @returns {[string, string]}
 */
function mscArrow(a, L) {
  const [sendIndex, endIndex, , src, dst, kind, , api, label, , , , drop] = a;
  const colour = apiColour(api);
  const x1 = L.x[src];
  const y1 = /** @type {number} */ (L.y.get(sendIndex));
  const xd = L.x[dst];
  let x2 = xd;
  let y2;
  if (endIndex === null) y2 = L.endRow !== null ? L.endRow : y1 + ROW;
  else y2 = /** @type {number} */ (L.y.get(endIndex));
  let dash = kind === "response" ? ' stroke-dasharray="5 3"' : "";
  if (endIndex === null) dash = ' stroke-dasharray="1 3"';
  const stroke = `fill="none" stroke="${colour}" stroke-width="1.5"${dash}`;
  const shapes = [];
  let endX;
  let headFrom;
  if (src === dst) {
    const side = x1 > Math.floor(MSC_WIDTH / 2) ? -1 : 1;
    const bend = x1 + side * LOOP_PX;
    endX = drop !== null ? bend : x1 + 2 * side;
    shapes.push(`<path d="M${x1} ${y1}C${bend} ${y1} ${bend} ${y2} ${endX} ${y2}" ${stroke}/>`);
    headFrom = bend;
  } else {
    if (drop !== null) x2 = x1 + Math.floor(((xd - x1) * 3) / 5);
    shapes.push(`<line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" ${stroke}/>`);
    endX = x2;
    headFrom = x1;
  }
  if (drop !== null)
    shapes.push(
      `<path d="M${endX - 5} ${y2 - 5}L${endX + 5} ${y2 + 5}M${endX - 5} ${y2 + 5}L${endX + 5} ${y2 - 5}" ` +
        'stroke="#cc0000" stroke-width="2"/>',
    );
  else shapes.push(arrowHead(headFrom, src !== dst ? y1 : y2, endX, y2, colour));
  const hover = `<title>${esc(arrowHover(a))}</title>`;
  const group =
    `<g class="arrow" data-api="${esc(api)}" data-kind="${esc(kind)}" data-index="${sendIndex}">` +
    hover +
    shapes.join("") +
    "</g>";
  const right = xd > x1 || (xd === x1 && x1 <= Math.floor(MSC_WIDTH / 2));
  const text =
    `<text class="label" data-index="${sendIndex}" x="${right ? x1 + 6 : x1 - 6}" y="${y1 - 3}" ` +
    `text-anchor="${right ? "start" : "end"}" fill="${colour}" stroke="#ffffff" stroke-width="3" ` +
    `paint-order="stroke">${hover}${esc(label)}</text>`;
  return [group, text];
}

/**
 * @param {any} c
 * @param {number} top
 * @returns {[string[], number]}
 */
function mscLegend(c, top) {
  const present = new Set(c.arrows.map((/** @type {any[]} */ a) => a[7]));
  /** @type {Array<[string, string, string]>} */
  const items = Object.keys(API_COLOURS)
    .filter((api) => present.has(api))
    .map((api) => [api, apiColour(api), ""]);
  for (const api of [...present].filter((p) => !(p in API_COLOURS)).sort()) items.push([api, apiColour(api), ""]);
  items.push(["request", "#333333", ""], ["response", "#333333", ' stroke-dasharray="5 3"']);
  if (c.arrows.some((/** @type {any[]} */ a) => a[1] === null))
    items.push(["in flight at the end", "#333333", ' stroke-dasharray="1 3"']);
  const out = ['<g class="legend">'];
  let x = 10;
  let y = top;
  for (const [name, colour, dash] of items) {
    const width = 26 + Math.floor(name.length * CHAR_PX) + 14;
    if (x + width > MSC_WIDTH - 10) {
      x = 10;
      y += 16;
    }
    out.push(
      `<line x1="${x}" y1="${y}" x2="${x + 20}" y2="${y}" stroke="${colour}" stroke-width="2"${dash}/>` +
        `<text x="${x + 26}" y="${y + 3}">${esc(name)}</text>`,
    );
    x += width;
  }
  if (c.arrows.some((/** @type {any[]} */ a) => a[12] !== null)) {
    if (x + 70 > MSC_WIDTH - 10) {
      x = 10;
      y += 16;
    }
    out.push(
      `<path d="M${x + 5} ${y - 5}L${x + 15} ${y + 5}M${x + 5} ${y + 5}L${x + 15} ${y - 5}" stroke="#cc0000" ` +
        `stroke-width="2"/><text x="${x + 26}" y="${y + 3}">dropped</text>`,
    );
  }
  out.push("</g>");
  return [out, y - top + 12];
}

/**
 * The sequence chart panel from the frame's ``msc`` value (sequence_svg.sequence_svg).
 * @param {any} c
 */
function mscPanel(c) {
  if (!c) return "";
  if (c.empty !== undefined) return `<div class="eos-empty">${esc(c.empty)}</div>`;
  const L = mscLayout(c);
  const [legend, legendHeight] = mscLegend(c, L.bottom + 14);
  const height = L.bottom + 14 + legendHeight + 8;
  const producer = `producer ${c.producer}, pid ${c.pid}`;
  const ys = [...L.y.keys()];
  const first = ys.length ? Math.min(...ys) : c.first;
  const last = ys.length ? Math.max(...ys) : c.last;
  const subtitle =
    `${producer}; trace events ${first}..${last}; ` +
    "time runs downwards (simulated ms at the left); hover an arrow for its detail";
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${MSC_WIDTH}" height="${height}" viewBox="0 0 ${MSC_WIDTH} ${height}" ` +
      'font-family="Helvetica, Arial, sans-serif" font-size="10">',
    `<title>${esc(c.heading)} (${esc(producer)})</title>`,
    `<rect x="0" y="0" width="${MSC_WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="18" font-size="13" font-weight="bold">${esc(c.heading)}</text>`,
    `<text x="10" y="34" fill="#555555">${esc(subtitle)}</text>`,
  ];
  for (const [node, roles] of c.lanes) {
    const x = L.x[node];
    const lines = [`<text x="${x}" y="58" text-anchor="middle" font-size="11" font-weight="bold">${esc(node)}</text>`];
    roles.forEach((/** @type {string} */ r, /** @type {number} */ i) =>
      lines.push(`<text x="${x}" y="${71 + 11 * i}" text-anchor="middle" font-size="9" fill="#444444">${esc(r)}</text>`),
    );
    parts.push(
      `<g class="lane" data-node="${esc(node)}"><title>${esc(node)}: ${esc(roles.join("; "))}</title>` +
        lines.join("") +
        `<line x1="${x}" y1="${L.top - 10}" x2="${x}" y2="${L.bottom}" stroke="#b0b0b0" stroke-width="1.5"/></g>`,
    );
  }
  for (const [y, ms] of L.timeLabels)
    parts.push(`<text x="${TIME_X}" y="${y + 3}" text-anchor="end" font-size="9" fill="#666666">${ms} ms</text>`);
  for (const [y, skipped] of L.gaps)
    parts.push(
      `<line x1="10" y1="${y}" x2="${MSC_WIDTH - 10}" y2="${y}" stroke="#999999" stroke-dasharray="2 4"/>` +
        `<text x="${TIME_X + 8}" y="${y - 3}" font-size="9" fill="#666666" font-style="italic">${skipped} ms later</text>`,
    );
  if (L.endRow !== null)
    parts.push(
      `<text x="${TIME_X}" y="${L.endRow + 3}" text-anchor="end" font-size="9" fill="#666666">end of trace</text>`,
    );
  /** @type {Array<[string, string]>} */
  const arrows = c.arrows.map((/** @type {any[]} */ a) => mscArrow(a, L));
  for (const [group] of arrows) parts.push(group);
  parts.push('<g class="labels">', ...arrows.map(([, label]) => label), "</g>");
  for (const [index, ms, node, name, text, detail] of c.notes) {
    const x = L.x[node];
    const y = /** @type {number} */ (L.y.get(index));
    const fill = NOTE_FILL[name] || (node === c.producer ? "#e8eef7" : "#eeeeee");
    const width = Math.floor(text.length * CHAR_PX) + 10;
    const hover = `${name} ${detail} (at ${ms} ms, trace #${index})`;
    parts.push(
      `<g class="note" data-index="${index}"><title>${esc(hover)}</title>` +
        `<rect x="${x - Math.floor(width / 2)}" y="${y - 7}" width="${width}" height="14" rx="3" fill="${fill}" stroke="#888888"/>` +
        `<text x="${x}" y="${y + 3}" text-anchor="middle" font-size="9" fill="#222222">${esc(text)}</text></g>`,
    );
  }
  parts.push(...legend, "</svg>");
  return parts.join("\n") + "\n";
}

/** What each panel is drawn from: the frame keys (or key prefixes, ending in ":") it reads. */
const DRAWN_FROM = {
  brokers: ["b:", "o:b", "ctl", "fr"],
  partitions: ["p:", "o:p", "b:", "o:b", "fr"],
  producers: ["pr:", "o:pr", "p:", "o:p", "b:", "t:", "o:t", "lt:", "o:l", "fr"],
  txns: ["t:", "o:t", "fr"],
  groups: ["g:", "o:g", "fr"],
  logs: ["lt:", "o:l", "p:", "o:p", "b:", "pr:", "o:pr", "t:", "o:t"],
  reads: ["p:", "o:p", "b:", "lt:", "o:l", "c:", "o:c", "rtp"],
  timeline: ["tl", "e:", "fw"],
  msc: ["msc"],
};

/** @type {Record<string, (v: View) => string>} */
const DRAW = {
  brokers: brokersPanel,
  partitions: partitionsPanel,
  producers: producersPanel,
  txns: txnsPanel,
  groups: groupsPanel,
  logs: logsPanel,
  reads: readsPanel,
  timeline: (v) => timelinePanel(v.f),
  msc: (v) => mscPanel(v.f.msc),
};

/**
 * The panels a change of ``keys`` redraws.
 * @param {string[]} keys
 * @returns {string[]}
 */
function touched(keys) {
  const prefixes = new Set(keys.map((k) => (k.startsWith("o:") || !k.includes(":") ? k : k.slice(0, k.indexOf(":") + 1))));
  return Object.entries(DRAWN_FROM)
    .filter(([, from]) => from.some((k) => prefixes.has(k)))
    .map(([name]) => name);
}

/** @param {RenderProps} props */
function render({ model, el: root }) {
  const dash = el("div", "eos-dash");
  root.appendChild(dash);

  // -- the control bar ---------------------------------------------------------------------------
  const top = el("div", "eos-top");
  const head = el("span", "eos-head");
  const rewound = el("span", "eos-rewound-note", "rewound: acting here asks before forking the run");
  top.append(head, rewound);
  const bar = el("div", "eos-bar");
  const play = /** @type {HTMLButtonElement} */ (el("button", "eos-play", PLAY));
  const step = /** @type {HTMLButtonElement} */ (el("button", "eos-step", "step event"));
  const stepReq = /** @type {HTMLButtonElement} */ (el("button", "eos-step-req", "step request"));
  const rate = /** @type {HTMLSelectElement} */ (el("select", "eos-rate"));
  for (const ms of [20, 50, 100, 200, 500, 1000, 5000]) {
    const o = document.createElement("option");
    o.value = String(ms);
    o.textContent = `${ms} ms/s`;
    rate.appendChild(o);
  }
  const scrub = /** @type {HTMLInputElement} */ (el("input", "eos-scrub"));
  scrub.type = "range";
  scrub.min = "0";
  scrub.step = "1";
  scrub.title =
    "drag back in time (or use the arrow keys, Home, End): every panel shows the board after the chosen event";
  const live = /** @type {HTMLButtonElement} */ (el("button", "eos-live", "live"));
  const note = el("div", "eos-note-bar");
  step.title = "run the next event handler";
  stepReq.title = "run until the next request is sent";
  bar.append(play, step, stepReq, rate, live);
  const track = el("div", "eos-track");
  track.appendChild(scrub);
  dash.append(top, bar, track, note);

  // -- the question asked before a fork ------------------------------------------------------------
  const ask = el("div", "eos-confirm");
  ask.setAttribute("role", "alertdialog");
  const askText = el("span", "eos-confirm-text");
  const fork = /** @type {HTMLButtonElement} */ (el("button", "eos-confirm-fork"));
  const cancel = /** @type {HTMLButtonElement} */ (el("button", "eos-confirm-cancel", "Cancel"));
  const goLive = /** @type {HTMLButtonElement} */ (el("button", "eos-confirm-live", "Go live"));
  ask.append(askText, fork, cancel, goLive);
  ask.hidden = true;
  dash.appendChild(ask);

  // -- the panels --------------------------------------------------------------------------------
  /** @type {Record<string, HTMLElement>} */
  const bodies = {};
  const grid = el("div", "eos-grid");
  for (const [name, title] of PANELS) {
    const section = el("section", `eos-panel eos-p-${name}`);
    const h = el("h4", "eos-panel-title", title);
    section.appendChild(h);
    const picker = PICKERS[name];
    if (picker) {
      const [trait, hint] = picker;
      const pick = /** @type {HTMLSelectElement} */ (el("select", `eos-${name}-select`));
      pick.title = hint;
      pick.addEventListener("change", () => {
        model.set(trait, pick.value);
        model.save_changes();
      });
      h.appendChild(pick);
      bodies[`${name}-select`] = pick;
    }
    const body = el("div", "eos-panel-body");
    section.appendChild(body);
    bodies[name] = body;
    grid.appendChild(section);
  }
  dash.appendChild(grid);

  // -- the frame, and the panels drawn from it ------------------------------------------------------
  /** @type {Frame} */
  let frame = {};
  /** @type {Record<string, string>} */
  const drawn = {};
  /** @param {string[]} names */
  function draw(names) {
    if (!names.length) return;
    const v = new View(frame);
    for (const name of names) {
      const html = DRAW[name](v);
      if (drawn[name] !== html) {
        bodies[name].innerHTML = html;
        drawn[name] = html;
      }
    }
  }
  /**
   * @param {any} msg
   * @param {DataView[]} [buffers]
   */
  function onFrame(msg, buffers) {
    if (!msg || msg.op !== "frame") return;
    if (msg.full) frame = {};
    for (const k of msg.del || []) delete frame[k];
    for (const [k, v] of Object.entries(msg.set || {})) {
      const packed = v !== null && typeof v === "object" && typeof v.buffer === "number" && buffers;
      frame[k] = packed ? unpack(buffers[v.buffer]) : v;
    }
    if (msg.full || (msg.set && "st" in msg.set)) showStatus();
    draw(msg.full ? PANELS.map(([name]) => name) : touched([...Object.keys(msg.set || {}), ...(msg.del || [])]));
  }

  /**
   * @param {string} select the key of the select element in ``bodies``
   * @param {string} list the trait holding the choices
   * @param {string} chosenTrait the trait holding the choice
   */
  function showChoices(select, list, chosenTrait) {
    const pick = /** @type {HTMLSelectElement} */ (bodies[select]);
    /** @type {string[]} */
    const names = model.get(list) || [];
    const chosen = String(model.get(chosenTrait) || "");
    pick.replaceChildren();
    for (const name of names) {
      const o = document.createElement("option");
      o.value = name;
      o.textContent = name;
      o.selected = name === chosen;
      pick.appendChild(o);
    }
  }
  const showTxnIds = () => showChoices("msc-select", "txn_ids", "msc_txn");
  const showPartitions = () => showChoices("reads-select", "partition_names", "reads_tp");

  let dragging = false;
  function showStatus() {
    const s = frame.st || {};
    head.textContent = `${s.title} · seed ${s.seed} · t=${s.time_ms} ms · event ${s.index} of ${s.last}`;
    head.dataset.index = String(s.index);
    head.dataset.time = String(s.time_ms);
    note.textContent = s.note || "";
    note.title = s.note || "";
    scrub.min = String(Math.max(0, s.first || 0));
    scrub.max = String(Math.max(0, s.last || 0));
    if (!dragging) scrub.value = String(s.index);
    dash.classList.toggle("eos-rewound", !s.live);
    dash.classList.toggle("eos-quiet", !!s.quiet);
    live.disabled = !!s.live;
  }

  function showPlaying() {
    const on = !!model.get("playing");
    play.textContent = on ? PAUSE : PLAY;
    play.classList.toggle("eos-on", on);
  }

  function showConfirm() {
    const q = model.get("confirm") || {};
    ask.hidden = !q.text;
    askText.textContent = q.text || "";
    fork.textContent = q.fork || "";
  }

  function showRate() {
    rate.value = String(model.get("rate"));
  }

  // -- events ------------------------------------------------------------------------------------
  play.addEventListener("click", () => send(model, model.get("playing") ? "pause" : "play"));
  step.addEventListener("click", () => send(model, "step"));
  stepReq.addEventListener("click", () => send(model, "step-request"));
  live.addEventListener("click", () => send(model, "live"));
  rate.addEventListener("change", () => {
    model.set("rate", Number(rate.value));
    model.save_changes();
  });
  fork.addEventListener("click", () => send(model, "fork"));
  cancel.addEventListener("click", () => send(model, "cancel"));
  goLive.addEventListener("click", () => send(model, "live"));
  /** @type {number | undefined} */
  let pending;
  // Send the slider's position a moment after it stops moving (a drag fires many input events).
  function scrubSoon() {
    dragging = true;
    if (pending !== undefined) clearTimeout(pending);
    pending = window.setTimeout(() => {
      const s = frame.st || {};
      const v = Number(scrub.value);
      model.set("scrub", v >= Number(s.last) ? -1 : v);
      model.save_changes();
      dragging = false;
    }, 60);
  }
  scrub.addEventListener("input", scrubSoon);
  /** @type {Record<string, (v: number, lo: number, hi: number) => number>} */
  const KEYS = {
    ArrowLeft: (v) => v - 1,
    ArrowDown: (v) => v - 1,
    ArrowRight: (v) => v + 1,
    ArrowUp: (v) => v + 1,
    PageDown: (v) => v - 10,
    PageUp: (v) => v + 10,
    Home: (_v, lo) => lo,
    End: (_v, _lo, hi) => hi,
  };
  // Handled here, not left to the browser: JupyterLab takes some keys for itself (Home and End
  // scroll the notebook), and a focused slider must step the time whatever the notebook's mode.
  scrub.addEventListener("keydown", (e) => {
    const move = KEYS[e.key];
    if (!move || e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    e.stopPropagation();
    const lo = Number(scrub.min);
    const hi = Number(scrub.max);
    scrub.value = String(Math.min(hi, Math.max(lo, move(Number(scrub.value), lo, hi))));
    scrubSoon();
  });
  grid.addEventListener("click", (e) => {
    const target = /** @type {HTMLElement | null} */ (e.target);
    const button = target ? /** @type {HTMLElement | null} */ (target.closest(".eos-act")) : null;
    if (!button) return;
    const op = button.dataset.op || "";
    send(model, op === "pause" ? "pause-node" : op, button.dataset.node);
  });

  /** @type {Array<[string, (...a: any[]) => void]>} */
  const handlers = [["msg:custom", onFrame]];
  handlers.push(["change:txn_ids", showTxnIds], ["change:msc_txn", showTxnIds]);
  handlers.push(["change:partition_names", showPartitions], ["change:reads_tp", showPartitions]);
  handlers.push(["change:playing", showPlaying], ["change:rate", showRate], ["change:confirm", showConfirm]);
  for (const [event, cb] of handlers) model.on(event, cb);
  send(model, "hello"); // the kernel answers with the whole frame
  showTxnIds();
  showPartitions();
  showStatus();
  showPlaying();
  showRate();
  showConfirm();

  const hide = hidePicture(String(model.get("picture") || ""));
  return () => {
    for (const [event, cb] of handlers) model.off(event, cb);
    hide();
  };
}

export default { render };
