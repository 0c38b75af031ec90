// The board's one script: live refresh (server-sent events), steering (JSON
// with the page's CSRF token), the timeline chart. Text from the server is
// set through textContent or arrives as escaped HTML; nothing is evaluated.
(() => {
  "use strict";
  const meta = (name) => (document.querySelector(`meta[name="${name}"]`) || {}).content || "";
  const csrf = meta("csrf");
  const main = document.getElementById("main");
  const flash = document.getElementById("flash");
  const live = document.getElementById("live");
  const who = document.getElementById("who");
  const plan = document.body.dataset.plan || "";
  const CHOICES = {
    status: ["pending", "in_progress", "completed", "cancelled"],
    priority: ["high", "medium", "low"],
  };
  if (!main) return;
  // Under a token the server names who writes: the page has no field then.
  if (who) {
    who.value = localStorage.getItem("todoledger.who") || meta("who");
    who.addEventListener("change", () => localStorage.setItem("todoledger.who", who.value.trim()));
  }

  function say(text, bad) {
    flash.textContent = text || "";
    flash.hidden = !text;
    flash.className = bad ? "bad" : "good";
  }

  // Live: one refresh at a time; a change while someone types waits for them.
  // A press waits too: a swap between a button's press and its release would
  // take the button away and lose the click.
  let busy = false, again = false, deferred = false, pressing = false;
  const typing = () => {
    if (pressing) return true;
    const el = document.activeElement;
    return el && main.contains(el) && el.matches("input, textarea, select:not([disabled])");
  };
  // A plan's rows: ask for those this page lacks or holds in an older form,
  // swap them in place, put every row in the plan's order.
  async function syncRows(list) {
    const rows = new Map();
    const known = {};
    for (const el of list.querySelectorAll(".row[data-id]")) {
      rows.set(el.dataset.id, el);
      known[el.dataset.id] = el.dataset.h;
    }
    const r = await fetch("/api/rows", {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" },
      // A paged plan (past 5,000 rows) keeps its page and filter.
      body: JSON.stringify({
        plan, known,
        window: { status: list.dataset.status || "all", q: list.dataset.q || "", page: Number(list.dataset.page || 1) },
      }),
    });
    if (!r.ok) return;
    const answer = await r.json();
    const head = document.getElementById("plan-head");
    const opened = [...head.querySelectorAll("details[open]")].map((d) => d.dataset.key);
    head.innerHTML = answer.head;
    for (const key of opened) {
      const d = head.querySelector(`details[data-key="${key}"]`);
      if (d) d.open = true;
    }
    const fresh = document.createElement("template");
    fresh.innerHTML = Object.values(answer.rows).join("");
    for (const el of fresh.content.querySelectorAll(".row[data-id]")) {
      const old = rows.get(el.dataset.id);
      if (old) old.replaceWith(el);
      rows.set(el.dataset.id, el);
    }
    // The n-th row of the plan goes to block n / size, in order (pages.CHUNK_ROWS): a row
    // already in its place stays, one elsewhere moves there, a block past the last row goes.
    const size = Number(list.dataset.chunk) || 50;
    const blocks = [...list.querySelectorAll(":scope > .chunk > .rows")];
    let n = 0, block = null, cursor = null;
    for (const id of answer.order) {
      const el = rows.get(id);
      if (!el) continue;
      if (n % size === 0) {
        block = blocks[n / size] || addBlock(list, n, blocks);
        cursor = block.firstElementChild;
      }
      n += 1;
      if (el === cursor) cursor = cursor.nextElementSibling;
      else block.insertBefore(el, cursor);
    }
    const wanted = new Set(answer.order);
    for (const [id, el] of rows) if (!wanted.has(id)) el.remove();
    for (const extra of blocks.slice(Math.ceil(n / size))) extra.parentElement.remove();
    main.dataset.change = String(answer.change);
  }
  // A block of rows as plan.html makes it: its counter starts at the rows before it.
  function addBlock(list, before, blocks) {
    const chunk = document.createElement("div");
    chunk.className = "chunk";
    chunk.setAttribute("role", "rowgroup");
    const block = document.createElement("div");
    block.className = "rows";
    block.style.counterReset = `row ${before}`;
    chunk.append(block);
    list.append(chunk);
    blocks.push(block);
    return block;
  }

  async function refresh() {
    if (typing()) { deferred = true; return; }
    if (busy) { again = true; return; }
    busy = true;
    try {
      const list = main.querySelector(".items[data-sync]");
      if (list) {
        await syncRows(list);
        document.dispatchEvent(new CustomEvent("board:refreshed"));
        return;
      }
      const r = await fetch(location.href, {
        headers: { "X-Fragment": "1" }, credentials: "same-origin", cache: "no-store",
      });
      if (r.ok) {
        const html = await r.text();
        // Someone started typing while the page was on its way: their input wins.
        if (typing()) { deferred = true; return; }
        const y = window.scrollY;
        main.innerHTML = html;
        main.dataset.change = r.headers.get("x-change") || main.dataset.change;
        window.scrollTo(0, y);
        afterRender();
        document.dispatchEvent(new CustomEvent("board:refreshed"));
      }
    } catch (e) {
      /* the server went away: the event stream says so */
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  const resume = () => setTimeout(() => {
    if (deferred && !typing()) { deferred = false; refresh(); }
  }, 0);
  main.addEventListener("focusout", resume);
  main.addEventListener("pointerdown", () => { pressing = true; });
  // After the click event of the same press has run (it is dispatched after pointerup).
  document.addEventListener("pointerup", () => setTimeout(() => { pressing = false; resume(); }, 0));
  document.addEventListener("pointercancel", () => { pressing = false; resume(); });
  // A release outside the window is never reported: the next move without a button ends the press.
  document.addEventListener("pointermove", (e) => { if (pressing && e.buttons === 0) { pressing = false; resume(); } });

  function connect() {
    const es = new EventSource("/events");
    es.onopen = () => { live.textContent = "live"; live.className = "on"; };
    es.onmessage = (e) => {
      const n = Number(e.data);
      if (n > Number(main.dataset.change || 0)) refresh();
    };
    es.onerror = () => { live.textContent = "reconnecting"; live.className = "off"; };
  }

  // Steering.
  async function act(body) {
    body.plan = body.plan || plan;
    if (who) body.who = who.value.trim();
    let r;
    try {
      r = await fetch("/api/action", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(body),
      });
    } catch (e) {
      say("the board's server does not answer", true);
      return false;
    }
    let answer = {};
    try { answer = await r.json(); } catch (e) { /* not JSON: say the status */ }
    if (!r.ok && answer.sign && !body.passphrase) {
      // A signed ledger: the person's passphrase, typed here, signs this one approval.
      const passphrase = await askPassphrase(answer.error);
      if (passphrase) { body.passphrase = passphrase; return act(body); }
    }
    if (!r.ok) { say(answer.error || `refused (${r.status})`, true); refresh(); return false; }
    say("");
    refresh();
    return true;
  }

  // The passphrase of the person's key, in a password field of a modal dialog: never
  // kept by the page, sent once with the approval it signs.
  function askPassphrase(message) {
    return new Promise((resolve) => {
      const dialog = document.createElement("dialog");
      dialog.className = "sign";
      const form = document.createElement("form");
      form.method = "dialog";
      const text = document.createElement("p");
      text.textContent = message;
      const input = document.createElement("input");
      input.type = "password";
      input.autocomplete = "off";
      input.setAttribute("aria-label", "passphrase");
      const ok = document.createElement("button");
      ok.value = "sign";
      ok.textContent = "sign";
      const cancel = document.createElement("button");
      cancel.value = "cancel";
      cancel.textContent = "cancel";
      form.append(text, input, ok, cancel);
      dialog.append(form);
      document.body.append(dialog);
      dialog.addEventListener("close", () => {
        const value = dialog.returnValue === "sign" ? input.value : null;
        input.value = "";
        dialog.remove();
        resolve(value);
      });
      dialog.showModal();
      input.focus();
    });
  }

  function chooser(button, kind, id) {
    const select = document.createElement("select");
    select.setAttribute("aria-label", kind);
    select.dataset.chooser = kind;
    for (const value of CHOICES[kind]) {
      const option = document.createElement("option");
      option.value = value;
      option.textContent = value.replace("_", " ");
      option.selected = value === button.dataset.value;
      select.append(option);
    }
    button.replaceWith(select);
    select.focus();
    select.addEventListener("change", async () => {
      const body = { action: kind, id, value: select.value };
      if (kind === "status" && select.value === "cancelled") {
        const reason = window.prompt("Why cancel it?");
        if (reason === null) { select.blur(); refresh(); return; }
        body.reason = reason;
      }
      select.disabled = true;
      select.blur();
      await act(body);
    });
  }

  document.addEventListener("click", async (ev) => {
    const button = ev.target.closest("button[data-act]");
    if (!button || !main.contains(button)) return;
    ev.preventDefault();
    const holder = button.closest("[data-id]");
    const id = button.dataset.id || (holder && holder.dataset.id) || "";
    const kind = button.dataset.act;
    if (kind === "status" || kind === "priority") { chooser(button, kind, id); return; }
    button.disabled = true;
    const body = { action: kind, id, value: button.dataset.value || "" };
    // A consent names the task and what the page showed of it (the server refuses it if that changed).
    if (button.dataset.task) { body.task = button.dataset.task; body.shown = button.dataset.shown || ""; }
    await act(body);
  });

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-form]");
    if (!form) return;
    ev.preventDefault();
    const d = new FormData(form);
    const holder = form.closest("[data-id]");
    const id = (holder && holder.dataset.id) || "";
    const kind = form.dataset.form;
    const bodies = {
      add: () => ({
        action: "add", content: d.get("content"), priority: d.get("priority"), estimate: d.get("estimate"),
        uses: d.get("uses"), needs_approval: d.get("needs_approval") === "on",
      }),
      content: () => ({ action: "content", id, value: d.get("content") }),
      fields: () => ({
        action: "fields", id, estimate: d.get("estimate"), uses: d.get("uses"),
        needs_approval: d.get("needs_approval") === "on",
      }),
      dep_add: () => ({ action: "dep_add", id, value: d.get("blocker") }),
      cancel: () => ({ action: "cancel", id, reason: d.get("reason") }),
    };
    if (!bodies[kind]) return;
    if (document.activeElement) document.activeElement.blur();
    if (await act(bodies[kind]()) && kind === "add") form.reset();
  });

  // The timeline: Plotly from the package's own copy, data from a JSON block. One row per
  // item in plan order, its whole text as the label (wrapped, each row as tall as its
  // longest label), the mode bar above the plot, never on it.
  const COLORS = {
    pending: "#9aa5b1", in_progress: "#e69500", completed: "#2e9e5b", cancelled: "#c0392b", dropped: "#7f8c8d",
  };
  const plain = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  function wrap(text, width) {
    const lines = [];
    let line = "";
    for (let word of String(text).split(/\s+/)) {
      while (word.length > width) { // a word longer than a line is cut across lines, never lost
        if (line) { lines.push(line); line = ""; }
        lines.push(word.slice(0, width));
        word = word.slice(width);
      }
      if (line && line.length + 1 + word.length > width) { lines.push(line); line = word; }
      else line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(line);
    return lines.length ? lines : [""];
  }
  const MODEBAR = { displaylogo: false, responsive: true, displayModeBar: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"] };
  const TOP = 48; // room above the plot for the mode bar
  function afterRender() {
    const block = document.getElementById("timeline-data");
    const chart = document.getElementById("chart");
    if (!block || !chart || !window.Plotly) return;
    const data = JSON.parse(block.textContent);
    const lines = {};
    for (const id of data.order) lines[id] = [...wrap(data.labels[id], 44).map(plain), `<span style="color:#5f6b76">${id}</span>`];
    const label = (id) => lines[id].join("<br>");
    const tallest = Math.max(1, ...data.order.map((id) => lines[id].length));
    const rowPx = 15 * tallest + 10;
    const sequence = data.axis === "sequence";
    const traces = data.statuses.map((status) => {
      const spans = data.spans.filter((s) => s.status === status);
      return {
        type: "bar", orientation: "h", name: status.replace("_", " "),
        y: spans.map((s) => label(s.item)),
        base: spans.map((s) => s.start),
        x: spans.map((s) => sequence ? Math.max(s.end - s.start, 0.25) : Math.max(Date.parse(s.end) - Date.parse(s.start), 1000)),
        customdata: spans.map((s) => sequence ? [data.ticks[s.start], data.ticks[s.end] || "the last call"] : [s.start, s.end]),
        hovertemplate: "%{customdata[0]} → %{customdata[1]}<extra>" + status + "</extra>",
        marker: { color: COLORS[status] },
      };
    });
    // The x axis on top, under the mode bar: a tall chart is read from its top.
    // Where the calls are more than the width holds (demo --checks adds a step per timed
    // change), every n-th is named: a first guess from the width, then, once drawn, wider
    // until no two labels overlap (measured, as the reader sees them).
    let every = sequence ? Math.max(1, Math.ceil((data.ticks.length * 150) / Math.max(200, chart.clientWidth - 260))) : 1;
    const tickLines = sequence ? Math.max(1, ...data.ticks.map((t) => wrap(t, 18).length)) : 1;
    const top = TOP + 16 * tickLines + 12;
    const layoutFor = (n) => ({
      barmode: "overlay", height: Math.max(320, rowPx * data.order.length + top + 80),
      margin: { l: 20, r: 20, t: top, b: 60 }, bargap: 0.35,
      xaxis: sequence
        ? { type: "linear", side: "top", range: [-0.1, data.ticks.length], tickvals: data.ticks.map((_, i) => i + 0.5),
            ticktext: data.ticks.map((t, i) => (i % n ? "" : wrap(plain(t), 18).join("<br>"))), showgrid: false }
        : { type: "date", side: "top" },
      yaxis: { type: "category", categoryorder: "array", categoryarray: data.order.map(label),
               autorange: "reversed", automargin: true, tickfont: { size: 12 } },
      legend: { orientation: "h", x: 0, y: 0, yanchor: "top", xanchor: "left" },
    });
    const overlapping = () => {
      const boxes = [...chart.querySelectorAll("g.xtick text")].map((t) => t.getBoundingClientRect())
        .filter((b) => b.width > 0).sort((a, b) => a.left - b.left);
      return boxes.some((b, i) => i > 0 && boxes[i - 1].right + 4 > b.left);
    };
    const settle = () => {
      if (!sequence || every >= data.ticks.length || !overlapping()) return undefined;
      every += 1;
      return window.Plotly.react(chart, traces, layoutFor(every), MODEBAR).then(settle);
    };
    window.Plotly.react(chart, traces, layoutFor(every), MODEBAR).then(settle);
  }

  // Sweeps: each metric against the first parameter; the server laid the
  // traces out (texts escaped for Plotly already), the script only draws them.
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  function drawSweeps() {
    if (!window.Plotly) return;
    for (const block of document.querySelectorAll("script.sweep-data")) {
      const data = JSON.parse(block.textContent);
      data.charts.forEach((chart, k) => {
        const el = document.getElementById(`${block.dataset.for}-${k}`);
        if (!el) return;
        const xs = chart.traces.flatMap((t) => (t.across ? [] : t.x));
        const traces = chart.traces.map((t) => {
          const across = t.across && xs.length > 0;
          // A baseline measured at one point spans every x of the chart (numbers or categories).
          const x = across ? [...new Set(xs)] : t.x;
          const trace = {
            type: "scatter", mode: across ? "lines" : "lines+markers", name: t.name, x,
            y: across ? x.map(() => t.y[0]) : t.y,
            line: { dash: t.baseline ? "dash" : "solid", color: PALETTE[t.group % PALETTE.length] },
            marker: { color: PALETTE[t.group % PALETTE.length] },
            customdata: t.y.map((y, i) => [t.lo[i], t.hi[i], t.n[i]]),
            hovertemplate: across
              ? `${t.name}: %{y}<extra></extra>`
              : "%{x}: median %{y}<br>min %{customdata[0]}, max %{customdata[1]}, n %{customdata[2]}<extra>" + t.name + "</extra>",
          };
          if (!across) {
            trace.error_y = {
              type: "data", symmetric: false,
              array: t.hi.map((h, i) => h - t.y[i]), arrayminus: t.lo.map((l, i) => t.y[i] - l),
            };
          }
          return trace;
        });
        // The y axis holds every median, its error bars and the baseline (from zero for a
        // count), and a baseline measured at one point is drawn across the whole chart.
        const ys = chart.traces.flatMap((t) => [...t.y, ...t.lo, ...t.hi]).filter((v) => v !== null);
        const top = Math.max(...ys), low = Math.min(0, ...ys);
        const shapes = chart.traces.filter((t) => t.across).map((t) => ({
          type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: t.y[0], y1: t.y[0],
          line: { dash: "dash", width: 2, color: PALETTE[t.group % PALETTE.length] },
        }));
        const single = new Set(xs).size < 2;
        const layout = {
          title: { text: `${chart.metric} against ${chart.x}`, x: 0, xref: "paper", xanchor: "left", y: 1,
                   yref: "container", yanchor: "top", pad: { t: 8 } },
          height: 400, shapes,
          margin: { l: 60, r: 20, t: 64, b: 50 }, legend: { orientation: "h", y: -0.25 },
          xaxis: { title: { text: chart.x }, type: chart.numeric && !single ? "linear" : "category" },
          yaxis: { title: { text: chart.metric }, range: [low, top + (top - low) * 0.1 || 1] },
        };
        window.Plotly.react(el, traces, layout, MODEBAR);
      });
    }
  }

  afterRender();
  drawSweeps();
  document.addEventListener("board:refreshed", drawSweeps);
  if (main.querySelector(".items[data-sync]")) {
    // The page carries every row it shows (the script runs once the document is parsed):
    // marks for bench/bench_board.py, when they are in and when the frame with them is out.
    performance.mark("board:rows");
    requestAnimationFrame(() => setTimeout(() => performance.mark("board:rows-painted"), 0));
  }
  connect();
})();
