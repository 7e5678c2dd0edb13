"use strict";
// cmem view: draws the timeline from the JSON embedded in this page. Every text that came from a memory is
// put on the page with textContent (never innerHTML), so markup in a title shows as text and never runs.
(function () {
  const data = JSON.parse(document.getElementById("cmem-data").textContent);
  const meta = data.meta;
  const items = data.items; // newest first
  const icons = meta.icons;
  const knownTypes = new Set(Object.keys(icons));
  const byId = new Map(items.map((item) => [String(item.id), item]));
  const sessions = data.sessions || {};
  const others = data.others || {};
  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function typeClass(type) {
    return knownTypes.has(type) ? "t-" + type : "";
  }
  function pad(n) {
    return String(n).padStart(2, "0");
  }
  function dayKey(date) {
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate());
  }
  function clock(date) {
    return pad(date.getHours()) + ":" + pad(date.getMinutes());
  }
  function longDay(key) {
    const [y, m, d] = key.split("-").map(Number);
    return new Date(y, m - 1, d).toLocaleDateString(undefined, {
      weekday: "short", year: "numeric", month: "short", day: "numeric",
    });
  }
  function plural(n, word) {
    return n.toLocaleString() + " " + word + (n === 1 ? "" : "s");
  }
  function shortSession(id) {
    return meta.session_prefixes && meta.session_prefixes[id] ? meta.session_prefixes[id] : String(id).slice(0, 8);
  }

  // -- links, both ways -------------------------------------------------------------------------------------
  const linksFrom = new Map();
  const linksTo = new Map();
  for (const link of data.links || []) {
    if (!linksFrom.has(String(link.from))) linksFrom.set(String(link.from), []);
    if (!linksTo.has(String(link.to))) linksTo.set(String(link.to), []);
    linksFrom.get(String(link.from)).push(link);
    linksTo.get(String(link.to)).push(link);
  }

  // -- what each row is searched by, and its markers --------------------------------------------------------
  for (const item of items) {
    item._date = new Date(item.created_at);
    item._day = dayKey(item._date);
    const words = [item.id, item.title, item.subtitle, item.narrative, item.text, item.key, item.agent,
      item.project, item.type, item.branch];
    for (const name of ["facts", "concepts", "files_read", "files_modified", "stale"]) {
      if (Array.isArray(item[name])) words.push(item[name].join(" "));
    }
    for (const name of ["request", "investigated", "learned", "completed", "next_steps", "notes"]) {
      words.push(item[name]);
    }
    item._haystack = words.filter((w) => w !== undefined && w !== null).join("\n").toLowerCase();
    item._markers = markers(item);
  }

  function markers(item) {
    const found = [];
    if (Array.isArray(item.stale) && item.stale.length) found.push("stale");
    else if (Array.isArray(item.drifted) && item.drifted.length) found.push("drifted");
    if (item.invalidated !== undefined && item.invalidated !== null) found.push("invalidated");
    if (item.superseded_by !== undefined && item.superseded_by !== null) found.push("superseded");
    if (item.possibly_superseded_by !== undefined && item.possibly_superseded_by !== null) found.push("possibly");
    if (item.unmerged && item.branch) found.push("branch");
    if (linksFrom.has(String(item.id)) || linksTo.has(String(item.id))) found.push("linked");
    return found;
  }

  // -- header -----------------------------------------------------------------------------------------------
  $("project").textContent = meta.title;
  document.title = "cmem view: " + meta.title;
  $("scope").textContent = meta.scope;
  if (meta.note) {
    $("note").textContent = meta.note;
    $("note").hidden = false;
  }
  $("generated").textContent = "Written by cmem " + meta.version + " at " +
    new Date(meta.generated_at).toLocaleString() + ". Keys: / filter, \u2191 \u2193 move, Enter open, Esc close.";

  // -- filter bar -------------------------------------------------------------------------------------------
  const state = { words: [], types: new Set(), project: "", agent: "", marker: "" };
  const typeCounts = new Map();
  for (const item of items) typeCounts.set(item.type, (typeCounts.get(item.type) || 0) + 1);
  const typeOrder = Object.keys(icons).filter((t) => typeCounts.has(t));
  for (const type of typeOrder) {
    state.types.add(type);
    const chip = el("button", "chip " + typeClass(type));
    chip.type = "button";
    chip.dataset.type = type;
    chip.setAttribute("aria-pressed", "true");
    chip.title = "Show or hide " + type + " rows";
    chip.append(el("span", "", icons[type]), el("span", "", type), el("span", "n", typeCounts.get(type)));
    chip.addEventListener("click", () => {
      const on = chip.getAttribute("aria-pressed") !== "true";
      chip.setAttribute("aria-pressed", on ? "true" : "false");
      if (on) state.types.add(type);
      else state.types.delete(type);
      apply();
    });
    $("types").append(chip);
  }

  function fillSelect(select, values, allLabel) {
    const all = el("option", "", allLabel);
    all.value = "";
    select.append(all);
    for (const value of values) {
      const option = el("option", "", value);
      option.value = value;
      select.append(option);
    }
    select.hidden = values.length < 2;
  }
  const distinct = (name) => [...new Set(items.map((i) => i[name]).filter(Boolean))].sort();
  fillSelect($("f-project"), distinct("project"), "all projects");
  fillSelect($("f-agent"), distinct("agent"), "all agents");
  const markerNames = { stale: "stale", drifted: "drifted", invalidated: "invalidated", superseded: "superseded", possibly: "maybe replaced", branch: "other branch",
    linked: "linked" };
  const present = Object.keys(markerNames).filter((m) => items.some((i) => i._markers.includes(m)));
  const markerSelect = $("f-marker");
  const anyMarker = el("option", "", "any marker");
  anyMarker.value = "";
  markerSelect.append(anyMarker);
  for (const name of present) {
    const option = el("option", "", "only " + markerNames[name]);
    option.value = name;
    markerSelect.append(option);
  }
  markerSelect.hidden = present.length === 0;

  $("q").addEventListener("input", () => {
    state.words = $("q").value.toLowerCase().split(/\s+/).filter(Boolean);
    apply();
  });
  $("f-project").addEventListener("change", (e) => { state.project = e.target.value; apply(); });
  $("f-agent").addEventListener("change", (e) => { state.agent = e.target.value; apply(); });
  markerSelect.addEventListener("change", (e) => { state.marker = e.target.value; apply(); });
  $("filters").addEventListener("submit", (e) => e.preventDefault());

  function visible(item) {
    if (!state.types.has(item.type)) return false;
    if (state.project && item.project !== state.project) return false;
    if (state.agent && item.agent !== state.agent) return false;
    if (state.marker && !item._markers.includes(state.marker)) return false;
    for (const word of state.words) if (!item._haystack.includes(word)) return false;
    return true;
  }

  // -- the timeline: days (newest first), sessions within a day, records in the order they happened ---------
  const rowsById = new Map();
  const dayNodes = [];
  const laneColours = ["#1a73e8", "#e37400", "#188038", "#a142f4", "#d93025", "#12b5cb", "#9aa0a6", "#f538a0"];
  const laneOf = new Map();

  function renderTimeline() {
    const timeline = $("timeline");
    const days = new Map();
    for (const item of items) {
      if (!days.has(item._day)) days.set(item._day, []);
      days.get(item._day).push(item);
    }
    for (const [day, dayItems] of days) {
      const section = el("section", "day");
      section.dataset.day = day;
      const heading = el("h2", "", longDay(day) + " ");
      const count = el("span", "n");
      heading.append(count);
      section.append(heading);
      const groups = new Map();
      for (const item of dayItems) {
        const key = item.session ? "s:" + item.session : "none";
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(item);
      }
      const groupNodes = [];
      for (const [key, groupItems] of groups) {
        const block = el("div", "session");
        const head = el("div", "head");
        if (key === "none") {
          head.append(el("span", "label", "Outside a session"));
        } else {
          const id = groupItems[0].session;
          const info = sessions[id] || {};
          if (!laneOf.has(id)) laneOf.set(id, laneColours[laneOf.size % laneColours.length]);
          block.style.setProperty("--lane", laneOf.get(id));
          head.append(el("span", "label", info.label || info.goal || "Session " + shortSession(id)));
          if (info.label && info.goal) head.append(el("span", "", "goal: " + info.goal));
          head.append(el("span", "mono", shortSession(id)));
          if (info.agent) head.append(el("span", "", info.agent));
          if (info.status) head.append(el("span", "", info.status));
        }
        block.append(head);
        const list = el("ol", "rows");
        const rows = [];
        for (const item of groupItems.slice().reverse()) { // oldest first inside a session
          const row = renderRow(item);
          list.append(row);
          rows.push(row);
        }
        block.append(list);
        section.append(block);
        groupNodes.push({ node: block, rows });
      }
      timeline.append(section);
      dayNodes.push({ node: section, count, groups: groupNodes });
    }
  }

  function renderRow(item) {
    const row = el("li", "row kind-" + item.kind + " " + typeClass(item.type));
    row.tabIndex = -1;
    row.dataset.id = String(item.id);
    row.setAttribute("role", "button");
    row.append(el("span", "time", clock(item._date)));
    const icon = el("span", "icon", icons[item.type] || "\u2022");
    icon.title = item.type;
    row.append(icon);
    const main = el("span", "main");
    main.append(el("span", "title", item.title));
    if (item.subtitle) main.append(el("span", "sub", item.subtitle));
    row.append(main);
    const tags = el("span", "tags");
    if (item.kind === "observation") tags.append(el("span", "tag type", item.type));
    for (const tag of markerTags(item)) tags.append(tag);
    tags.append(el("span", "id", "#" + item.id));
    row.append(tags);
    if (item._markers.includes("superseded")) row.classList.add("is-superseded");
    row.addEventListener("click", () => { select(row); openDetails(item); });
    rowsById.set(String(item.id), row);
    return row;
  }

  function markerTags(item) {
    const tags = [];
    if (item._markers.includes("stale")) {
      const tag = el("span", "tag stale", "stale");
      tag.title = "Cited files changed since: " + item.stale.join(", ");
      tags.push(tag);
    }
    if (item._markers.includes("drifted")) {
      const tag = el("span", "tag drifted", "drifted");
      tag.title = "Some of the lines it is about changed (most still hold): " + item.drifted.join(", ");
      tags.push(tag);
    }
    if (item._markers.includes("invalidated")) {
      const tag = el("span", "tag invalidated", "invalidated");
      tag.title = "No longer holds: " + item.invalidated + " (left out of search, context and the briefing)";
      tags.push(tag);
    }
    if (item._markers.includes("superseded")) {
      tags.push(el("span", "tag superseded", "replaced by #" + item.superseded_by));
    }
    if (item._markers.includes("possibly")) {
      const tag = el("span", "tag possibly", "maybe replaced by #" + item.possibly_superseded_by);
      tag.title = "Inferred: a newer memory states an update of what this one says (a hint, not a link)";
      tags.push(tag);
    }
    if (item._markers.includes("branch")) {
      const tag = el("span", "tag branch", "\u2387 " + item.branch);
      tag.title = "Recorded on branch " + item.branch + ", whose work " +
        (meta.branch ? "the current branch (" + meta.branch + ")" : "the current HEAD") + " has not merged";
      tags.push(tag);
    }
    const links = (linksFrom.get(String(item.id)) || []).length + (linksTo.get(String(item.id)) || []).length;
    if (links) {
      const tag = el("span", "tag links", "\u2194 " + links);
      tag.title = plural(links, "link");
      tags.push(tag);
    }
    return tags;
  }

  // -- applying the filters: rows, groups and days hidden or shown, counts and chart redrawn ----------------
  let shownItems = items;
  function apply() {
    shownItems = [];
    for (const item of items) {
      const on = visible(item);
      const row = rowsById.get(String(item.id));
      if (row.hidden === on) row.hidden = !on; // unchanged rows are left alone: no style work for them
      if (on) shownItems.push(item);
    }
    for (const day of dayNodes) {
      let n = 0;
      for (const group of day.groups) {
        const m = group.rows.filter((row) => !row.hidden).length;
        group.node.hidden = m === 0;
        n += m;
      }
      day.node.hidden = n === 0;
      day.count.textContent = "\u00b7 " + n;
    }
    $("shown").textContent = shownItems.length === items.length
      ? plural(items.length, "record")
      : shownItems.length.toLocaleString() + " of " + plural(items.length, "record");
    $("empty").hidden = shownItems.length > 0;
    $("empty").textContent = items.length ? "No record matches these filters." : meta.empty;
    drawChart();
    if (current && current.hidden) select(firstVisible());
  }

  // -- the chart: records per day, stacked by type -----------------------------------------------------------
  const SVG = "http://www.w3.org/2000/svg";
  function chartDays() {
    // the window's days, from its start (or the oldest record) to its end (or now), at most 400 of them
    const now = new Date(meta.generated_at);
    const newest = items.length ? items[0]._date : now;
    const oldest = items.length ? items[items.length - 1]._date : now;
    let start = meta.since ? new Date(meta.since) : oldest;
    if (start > oldest) start = oldest;
    let end = meta.until && new Date(meta.until) < now ? new Date(meta.until) : now;
    if (end < newest) end = newest;
    if (end - start > 400 * 86400000) start = new Date(Math.max(oldest, end - 400 * 86400000));
    const days = [];
    const cursor = new Date(start.getFullYear(), start.getMonth(), start.getDate());
    while (cursor <= end && days.length < 401) {
      days.push(dayKey(cursor));
      cursor.setDate(cursor.getDate() + 1);
    }
    return days;
  }
  const allDays = chartDays();
  function drawChart() {
    const svg = $("chart-svg");
    svg.replaceChildren();
    const counts = new Map(allDays.map((d) => [d, new Map()]));
    for (const item of shownItems) {
      const day = counts.get(item._day);
      if (day) day.set(item.type, (day.get(item.type) || 0) + 1);
    }
    let max = 1;
    for (const day of counts.values()) {
      let total = 0;
      for (const n of day.values()) total += n;
      max = Math.max(max, total);
    }
    const width = 10;
    const height = 56;
    svg.setAttribute("viewBox", "0 0 " + Math.max(allDays.length, 1) * width + " " + height);
    svg.setAttribute("preserveAspectRatio", "none");
    allDays.forEach((key, i) => {
      const group = document.createElementNS(SVG, "g");
      const day = counts.get(key);
      const parts = [];
      const bg = document.createElementNS(SVG, "rect");
      bg.setAttribute("class", "day-bg");
      bg.setAttribute("x", i * width);
      bg.setAttribute("y", 0);
      bg.setAttribute("width", width);
      bg.setAttribute("height", height);
      group.append(bg);
      let y = height;
      for (const type of typeOrder) {
        const n = day.get(type);
        if (!n) continue;
        parts.push(n + " " + type);
        const h = (n / max) * (height - 2);
        y -= h;
        const bar = document.createElementNS(SVG, "rect");
        bar.setAttribute("class", "bar " + typeClass(type));
        bar.setAttribute("x", i * width + 1);
        bar.setAttribute("y", y);
        bar.setAttribute("width", width - 2);
        bar.setAttribute("height", h);
        group.append(bar);
      }
      const title = document.createElementNS(SVG, "title");
      title.textContent = longDay(key) + ": " + (parts.length ? parts.join(", ") : "nothing");
      group.prepend(title);
      group.addEventListener("click", () => {
        const section = document.querySelector('section.day[data-day="' + key + '"]');
        if (section && !section.hidden) section.scrollIntoView({ block: "start" });
      });
      svg.append(group);
    });
    $("chart-from").textContent = allDays.length ? longDay(allDays[0]) : "";
    $("chart-to").textContent = allDays.length ? longDay(allDays[allDays.length - 1]) : "";
  }

  // -- selection and keyboard -------------------------------------------------------------------------------
  let current = null;
  function visibleRows() {
    return [...document.querySelectorAll("#timeline .row")].filter(
      (row) => !row.hidden && !row.closest("[hidden]"));
  }
  function firstVisible() {
    return visibleRows()[0] || null;
  }
  function select(row, focus) {
    if (current) {
      current.classList.remove("current");
      current.tabIndex = -1;
    }
    current = row;
    if (!row) return;
    row.classList.add("current");
    row.tabIndex = 0;
    if (focus) {
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: "nearest" });
    }
  }
  function move(step) {
    const rows = visibleRows();
    if (!rows.length) return;
    let at = current ? rows.indexOf(current) : -1;
    at = at < 0 ? (step > 0 ? 0 : rows.length - 1) : Math.min(rows.length - 1, Math.max(0, at + step));
    select(rows[at], true);
    if (!$("details").hidden) openDetails(byId.get(rows[at].dataset.id), true);
  }
  const isRow = (target) => target instanceof HTMLElement && rowsById.get(target.dataset.id) === target;
  const typing = (target) => target instanceof HTMLInputElement || target instanceof HTMLSelectElement;
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (event.key === "/" && !typing(target)) {
      event.preventDefault();
      $("q").focus();
      $("q").select();
    } else if (event.key === "Escape") {
      if (!$("details").hidden) {
        closeDetails();
      } else if (typing(target)) {
        target.blur();
        if (current) current.focus({ preventScroll: true });
      }
    } else if ((event.key === "ArrowDown" || event.key === "ArrowUp") && (target === $("q") || !typing(target))) {
      event.preventDefault();
      move(event.key === "ArrowDown" ? 1 : -1);
    } else if ((event.key === "j" || event.key === "k") && !typing(target)) {
      move(event.key === "j" ? 1 : -1);
    } else if (event.key === "Enter" && (target === $("q") || target === document.body || isRow(target))) {
      if (target === $("q") && !current) select(firstVisible(), true);
      if (current) {
        event.preventDefault();
        openDetails(byId.get(current.dataset.id));
      }
    }
  });

  // -- the details panel: the full record ---------------------------------------------------------------------
  function section(parent, heading, content) {
    if (content === undefined || content === null || content === "") return;
    if (Array.isArray(content) && !content.length) return;
    parent.append(el("h3", "", heading));
    if (Array.isArray(content)) {
      const list = el("ul");
      for (const entry of content) list.append(entry instanceof Node ? wrapLi(entry) : el("li", "", entry));
      parent.append(list);
    } else if (content instanceof Node) {
      parent.append(content);
    } else {
      parent.append(el("p", "text", content));
    }
  }
  function wrapLi(node) {
    const li = el("li");
    li.append(node);
    return li;
  }
  function linkEntry(link, otherId) {
    const target = byId.get(String(otherId)) || others[String(otherId)];
    const frag = document.createDocumentFragment();
    frag.append(el("span", "", link.type.replace(/_/g, " ") + " "));
    const title = target ? "#" + otherId + " " + target.title : "#" + otherId;
    if (byId.has(String(otherId))) {
      const jump = el("button", "jump", title);
      jump.type = "button";
      jump.addEventListener("click", () => showRecord(String(otherId)));
      frag.append(jump);
    } else {
      frag.append(el("span", "", title + " (not in this window)"));
    }
    return frag;
  }
  function showRecord(id) {
    let row = rowsById.get(id);
    if (!row) return;
    if (row.hidden || row.closest("[hidden]")) { // a filter hides it: clear the filters
      resetFilters();
      row = rowsById.get(id);
    }
    select(row, true);
    openDetails(byId.get(id));
  }
  function resetFilters() {
    $("q").value = "";
    state.words = [];
    for (const chip of document.querySelectorAll("#types .chip")) {
      chip.setAttribute("aria-pressed", "true");
      state.types.add(chip.dataset.type);
    }
    for (const id of ["f-project", "f-agent", "f-marker"]) $(id).value = "";
    state.project = state.agent = state.marker = "";
    apply();
  }
  function definition(list, term, value, mono) {
    if (value === undefined || value === null || value === "") return;
    list.append(el("dt", "", term));
    const dd = el("dd", mono ? "mono" : "");
    if (value instanceof Node) dd.append(value);
    else dd.textContent = String(value);
    list.append(dd);
  }

  function openDetails(item, keepFocus) {
    if (!item) return;
    const panel = $("details");
    const body = $("details-body");
    body.replaceChildren();
    const heading = el("h2", "");
    heading.append(el("span", "", (icons[item.type] || "\u2022") + " "), document.createTextNode(
      item.kind === "prompt" ? "Prompt " + item.id : item.title));
    body.append(heading);
    if (item.subtitle) body.append(el("p", "subtitle", item.subtitle));
    const tags = el("div", "markers");
    for (const tag of markerTags(item)) tags.append(tag);
    if (tags.childNodes.length) body.append(tags);

    if (Array.isArray(item.stale) && item.stale.length) section(body, "Stale: cited files changed", item.stale);
    if (item._markers.includes("drifted")) section(body, "Drifted: some of its lines changed", item.drifted);
    if (item._markers.includes("branch")) {
      section(body, "Another branch", "Recorded on " + item.branch + ", whose work " +
        (meta.branch || "the current HEAD") + " has not merged.");
    }
    if (item.superseded_by !== undefined && item.superseded_by !== null) {
      const entry = linkEntry({ type: "replaced by" }, item.superseded_by);
      section(body, "Replaced", [entry]);
    }
    if (item._markers.includes("possibly")) {
      const entry = linkEntry({ type: "maybe replaced by" }, item.possibly_superseded_by);
      section(body, "Maybe replaced (inferred)", [entry]);
    }
    if (item._markers.includes("invalidated")) section(body, "Invalidated", item.invalidated);
    if (item.kind === "prompt") section(body, "Prompt", item.text);
    if (item.kind === "summary") {
      for (const name of ["request", "investigated", "learned", "completed", "next_steps", "notes"]) {
        section(body, name.replace("_", " "), item[name]);
      }
    }
    section(body, "Narrative", item.narrative);
    section(body, "Facts", item.facts);
    section(body, "Concepts", item.concepts && item.concepts.length ? item.concepts.join(", ") : null);
    section(body, "Files modified", (item.files_modified || []).map((f) => el("code", "", f)));
    section(body, "Files read", (item.files_read || []).map((f) => el("code", "", f)));
    section(body, "Tools", item.tools_used && item.tools_used.length ? item.tools_used.join(", ") : null);
    const id = String(item.id);
    section(body, "Links to", (linksFrom.get(id) || []).map((l) => linkEntry(l, l.to)));
    section(body, "Linked from", (linksTo.get(id) || []).map((l) => linkEntry(l, l.from)));

    const list = el("dl");
    definition(list, "id", item.kind === "observation" ? "#" + item.id : item.id);
    definition(list, "type", item.type);
    definition(list, "created", new Date(item.created_at).toLocaleString() + " (" + item.created_at + ")");
    if (item.updated_at && item.updated_at !== item.created_at) definition(list, "updated", item.updated_at);
    definition(list, "project", item.project);
    definition(list, "agent", item.agent);
    definition(list, "machine", item.machine);
    definition(list, "author", item.author, true);
    if (item.session) {
      const info = sessions[item.session] || {};
      definition(list, "session", (info.label || info.goal || "") + " " + item.session, true);
    }
    definition(list, "prompt", item.prompt_number);
    definition(list, "branch", item.branch);
    definition(list, "key", item.key, true);
    definition(list, "confidence", item.confidence);
    definition(list, "tokens", item.tokens);
    definition(list, "retrievals", item.retrieval_count);
    definition(list, "uid", item.uid, true);
    if (item.kind === "observation") definition(list, "citation", meta.uri_prefix + item.uid, true);
    definition(list, "file", item.path, true);
    body.append(el("h3", "", "Record"), list);
    if (item.kind === "observation") body.append(curation(item));

    panel.hidden = false;
    panel.scrollTop = 0;
    if (history.replaceState) history.replaceState(null, "", "#" + id);
    if (!keepFocus && window.matchMedia("(max-width: 760px)").matches) $("details-close").focus();
  }
  // Curation: the page makes no request of any kind, so its control hands over the one command that does it
  // (`cmem invalidate ID --reason ...`, or `cmem restore ID`), copied to the clipboard.
  function shellQuote(text) {
    return "'" + text.replace(/'/g, "'\\''") + "'";
  }
  function curation(item) {
    const box = el("div", "curation");
    const invalid = item.invalidated !== undefined && item.invalidated !== null;
    const reason = el("input", "reason");
    reason.type = "text";
    reason.placeholder = "why it no longer holds (optional)";
    reason.setAttribute("aria-label", "Reason");
    const command = el("code", "command");
    const show = () => {
      const why = reason.value.trim();
      command.textContent = invalid ? "cmem restore " + item.id
        : "cmem invalidate " + item.id + (why ? " --reason " + shellQuote(why) : "");
    };
    reason.addEventListener("input", show);
    show();
    const button = el("button", "copy", invalid ? "Restore…" : "Invalidate…");
    button.type = "button";
    button.title = "Copy the command; run it in a terminal";
    const said = el("span", "copied", "");
    button.addEventListener("click", () => {
      const text = command.textContent;
      const done = () => { said.textContent = "copied: run it in a terminal"; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, () => { select(command); said.textContent = "select and copy"; });
      } else {
        select(command);
        said.textContent = "select and copy";
      }
    });
    function select(node) {
      const range = document.createRange();
      range.selectNodeContents(node);
      const chosen = window.getSelection();
      chosen.removeAllRanges();
      chosen.addRange(range);
    }
    box.append(el("h3", "", invalid ? "Restore" : "Invalidate"));
    if (!invalid) box.append(reason);
    box.append(button, " ", command, " ", said);
    return box;
  }
  function closeDetails() {
    $("details").hidden = true;
    if (history.replaceState) history.replaceState(null, "", "#");
    if (current) current.focus({ preventScroll: true });
  }
  $("details-close").addEventListener("click", closeDetails);

  // -- start --------------------------------------------------------------------------------------------------
  const bar = $("filters");
  const setBarHeight = () => document.documentElement.style.setProperty(
    "--filters-h", (getComputedStyle(bar).position === "sticky" ? bar.offsetHeight : 0) + "px");
  setBarHeight(); // before the rows exist: measuring the bar then lays out nothing else
  window.addEventListener("resize", setBarHeight);
  renderTimeline();
  apply();
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted && byId.has(wanted)) showRecord(wanted);
  // bench/view.py reads these: the rows are built (ready), and the first frame showing them was painted
  performance.mark("cmem:ready");
  requestAnimationFrame(() => setTimeout(() => performance.mark("cmem:drawn"), 0));
  document.body.dataset.ready = "true";
})();
