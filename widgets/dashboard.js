// The eos-magics dashboard front-end (anywidget ES module; no CDN, no build step).
//
// The kernel renders every panel to HTML (widgets/panels.py) and sends a panel only when its
// text changed. This module lays the panels out, swaps their HTML in, and turns the controls
// and the fault buttons inside the panels into messages to the kernel:
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

  /** @param {string} name */
  function showPanel(name) {
    bodies[name].innerHTML = String(model.get(name) || "");
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
    const s = model.get("status") || {};
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
      const s = model.get("status") || {};
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

  /** @type {Array<[string, () => void]>} */
  const handlers = PANELS.map(([name]) => [`change:${name}`, () => showPanel(name)]);
  handlers.push(["change:status", showStatus], ["change:txn_ids", showTxnIds], ["change:msc_txn", showTxnIds]);
  handlers.push(["change:partition_names", showPartitions], ["change:reads_tp", showPartitions]);
  handlers.push(["change:playing", showPlaying], ["change:rate", showRate], ["change:confirm", showConfirm]);
  for (const [event, cb] of handlers) model.on(event, cb);
  for (const [name] of PANELS) showPanel(name);
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
