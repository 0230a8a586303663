/* omp-session viewer: shows the conversation as the model sees it at any node of the session tree.
 *
 * Every entry of every branch is already in the page (#entry-store); this script only moves the
 * entries of the selected path into #transcript, in the order build_session_context() gives them
 * (spec §5: with a compaction, its summary comes first, then the kept entries, then the rest).
 * Nothing from the session is ever inserted as HTML here: only ids are read, and text is set with
 * textContent. Used unchanged by the server pages and the self-contained export.
 * Keyboard, local times and the marking of a search term are common.js's; the viewer serves it
 * within its one script, viewer.js, and the export inlines it after common.js (rendering/page.py,
 * JOINED_SCRIPTS). On a page without #session-data (the windowed page) it does nothing.
 */
(function () {
  "use strict";

  var state = null;

  function load() {
    var dataElement = document.getElementById("session-data");
    if (!dataElement) return null;
    var data = JSON.parse(dataElement.textContent);
    var entries = new Map();
    var children = new Map();
    data.entries.forEach(function (row, position) {
      var item = {
        key: row[0], parent: row[1], ctx: row[2] === 1, type: row[3], kept: row[4],
        remote: row[5] === 1, usage: row[6], position: position
      };
      entries.set(item.key, item);
      if (item.parent !== null) {
        if (!children.has(item.parent)) children.set(item.parent, []);
        children.get(item.parent).push(item.key);
      }
    });
    var elements = new Map();
    document.querySelectorAll("#entry-store > .entry, #transcript .entry").forEach(function (el) {
      elements.set(el.getAttribute("data-key"), el);
    });
    var rows = new Map();
    document.querySelectorAll(".tree .row").forEach(function (el) {
      rows.set(el.getAttribute("data-key"), el);
    });
    return {
      entries: entries, children: children, elements: elements, rows: rows,
      leaf: data.leaf, selected: null, initial: data.selected || data.leaf, shown: []
    };
  }

  /* Root→node path over parent keys; a cycle can not hang the page. */
  function pathTo(key) {
    var path = [];
    var seen = new Set();
    var current = state.entries.get(key);
    while (current && !seen.has(current.key)) {
      seen.add(current.key);
      path.push(current);
      current = current.parent === null ? undefined : state.entries.get(current.parent);
    }
    return path.reverse();
  }

  /* The same split as context.context_from_path: only the last compaction on the path counts;
     an omp 18 /clear (reset_boundary) after it starts the context after the boundary. */
  function arrange(path) {
    var at = -1;
    var reset = -1;
    path.forEach(function (item, i) {
      if (item.type === "compaction") at = i;
      if (item.type === "reset_boundary") reset = i;
    });
    if (reset >= 0 && reset > at) {
      return { dropped: path.slice(0, reset), summary: null, cleared: path[reset], rest: path.slice(reset + 1) };
    }
    if (at < 0) return { dropped: [], summary: null, rest: path };
    var compaction = path[at];
    var before = path.slice(0, at);
    var start = -1;
    if (!compaction.remote && compaction.kept !== null) {
      start = before.findIndex(function (item) { return item.key === compaction.kept; });
    }
    return {
      dropped: start >= 0 ? before.slice(0, start) : before,
      summary: compaction,
      rest: (start >= 0 ? before.slice(start) : []).concat(path.slice(at + 1))
    };
  }

  function place(parent, item, extraClass) {
    var el = state.elements.get(item.key);
    if (!el) return;
    el.classList.toggle("ctx", extraClass === "summary" || (item.ctx && extraClass !== "dropped"));
    el.classList.toggle("dropped", extraClass === "dropped");
    el.classList.toggle("active-compaction", extraClass === "summary");
    parent.appendChild(el);
    state.shown.push(el);
  }

  function formatTokens(n) {
    if (n < 1000) return String(Math.round(n));
    if (n < 1000000) return (n / 1000).toFixed(1) + "k";
    return (n / 1000000).toFixed(1) + "M";
  }

  function formatCost(c) {
    if (c <= 0) return "$0";
    return c >= 0.1 ? "$" + c.toFixed(2) : "$" + c.toFixed(4);
  }

  function usageText(path) {
    var sum = [0, 0, 0, 0, 0];
    var turns = 0;
    path.forEach(function (item) {
      if (!item.usage) return;
      turns += 1;
      for (var i = 0; i < 5; i++) sum[i] += item.usage[i] || 0;
    });
    if (!turns) return "";
    var parts = ["branch: in " + formatTokens(sum[0]), "out " + formatTokens(sum[1])];
    if (sum[2] || sum[3]) parts.push("cache " + formatTokens(sum[2]) + "/" + formatTokens(sum[3]));
    parts.push(formatCost(sum[4]));
    return parts.join(" · ");
  }

  function updateBar(key, path, sent) {
    var row = state.rows.get(key);
    var text = row ? row.querySelector(".txt").textContent : key;
    var where = document.getElementById("bar-where");
    where.textContent = (key === state.leaf ? "Current branch, at the leaf: " : "Context at: ") + text;
    document.getElementById("bar-count").textContent =
      sent + " message" + (sent === 1 ? "" : "s") + " sent to the model · " + path.length + " entries on the path";
    document.getElementById("bar-usage").textContent = usageText(path);
    document.getElementById("bar-leaf").hidden = key === state.leaf;
  }

  function markTree(key, path) {
    state.rows.forEach(function (row) { row.classList.remove("sel", "inpath"); });
    path.forEach(function (item) {
      var row = state.rows.get(item.key);
      if (row) row.classList.add("inpath");
    });
    var selected = state.rows.get(key);
    if (selected) selected.classList.add("sel");
  }

  /* Show the context at `key`: the entries of its path, arranged as the model receives them. */
  function select(key) {
    if (!state.entries.has(key)) key = state.leaf;
    if (!state.entries.has(key)) return;
    var store = document.getElementById("entry-store");
    var transcript = document.getElementById("transcript");
    state.shown.forEach(function (el) { store.appendChild(el); });
    state.shown = [];
    transcript.replaceChildren();
    var path = pathTo(key);
    var parts = arrange(path);
    if (parts.dropped.length) {
      var group = document.createElement("details");
      group.className = "compacted";
      var summary = document.createElement("summary");
      summary.textContent = parts.dropped.length + " earlier entr" + (parts.dropped.length === 1 ? "y is" : "ies are") +
        (parts.cleared ? " cleared by /clear below" : " replaced by the compaction summary below") +
        " (not sent to the model)";
      group.appendChild(summary);
      parts.dropped.forEach(function (item) { place(group, item, "dropped"); });
      transcript.appendChild(group);
    }
    if (parts.cleared) place(transcript, parts.cleared, "");
    if (parts.summary) place(transcript, parts.summary, "summary");
    parts.rest.forEach(function (item) { place(transcript, item, ""); });
    var sent = (parts.summary ? 1 : 0) + parts.rest.filter(function (item) { return item.ctx; }).length;
    state.selected = key;
    markTree(key, path);
    updateBar(key, path, sent);
    if (observer) followTranscript();
  }

  /* The newest leaf below `key` (last child in file order at every step), for deep links. */
  function newestLeafUnder(key) {
    var seen = new Set();
    while (state.children.has(key) && !seen.has(key)) {
      seen.add(key);
      var list = state.children.get(key);
      key = list[list.length - 1];
    }
    return key;
  }

  function onPath(key) {
    return pathTo(state.selected).some(function (item) { return item.key === key; });
  }

  function highlight(key, block) {
    document.querySelectorAll(".entry.target").forEach(function (el) { el.classList.remove("target"); });
    var el = state.elements.get(key);
    if (el) {
      var group = el.closest("details.compacted");
      if (group) group.open = true;
      window.ompLand(el, block);
    }
    var row = state.rows.get(key);
    if (row) row.scrollIntoView({ block: "nearest" });
  }

  function fromHash() {
    var raw = location.hash.slice(1);
    var target;
    try { target = decodeURIComponent(raw); } catch (e) { target = ""; }
    if (target.indexOf("at=") === 0) {
      select(target.slice(3));
      highlight(state.selected, "center");
    } else if (target && state.entries.has(target)) {
      /* A deep link: keep the shown branch if it holds the entry, else the newest branch below it. */
      if (!state.selected || !onPath(target)) {
        select(onPathOf(state.leaf, target) ? state.leaf : newestLeafUnder(target));
      }
      highlight(target, "center");
    } else if (!state.selected) {
      select(state.initial);
    }
  }

  function onPathOf(leaf, key) {
    return pathTo(leaf).some(function (item) { return item.key === key; });
  }

  /* Live updates: poll the file's version; on change fetch the re-rendered session and swap it in. */
  function startLive() {
    var body = document.body;
    var versionUrl = body.getAttribute("data-version-url");
    var bodyUrl = body.getAttribute("data-body-url");
    if (!versionUrl || !bodyUrl || !window.fetch) return;
    var version = body.getAttribute("data-version");
    var interval = parseInt(body.getAttribute("data-poll-ms"), 10) || 2000;
    var busy = false;
    function refresh() {
      return fetch(bodyUrl, { cache: "no-store" }).then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      }).then(function (html) {
        var following = state.selected === state.leaf;
        var previous = state.selected;
        var nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
        var template = document.createElement("template");
        template.innerHTML = html;
        document.getElementById("session-root").replaceChildren(template.content);
        state = load();
        select(following ? state.leaf : previous);
        wire();
        if (following && nearBottom) window.scrollTo(0, document.body.scrollHeight);
        var badge = document.getElementById("live");
        if (badge) {
          badge.classList.add("updated");
          setTimeout(function () { badge.classList.remove("updated"); }, 1500);
        }
      });
    }
    function poll() {
      if (busy || document.hidden) return;
      busy = true;
      fetch(versionUrl, { cache: "no-store" }).then(function (response) {
        return response.json();
      }).then(function (data) {
        if (data.version !== version) {
          version = data.version;
          return refresh();
        }
      }).catch(function () { /* the server may be gone; try again on the next tick */ })
        .then(function () { busy = false; });
    }
    var badge = document.getElementById("live");
    if (badge) badge.classList.add("on");
    setInterval(poll, interval);
  }


  /* The tree filter: rows whose text or label holds the query stay, the rest hide (issue 13 #3). */
  function filterTree() {
    var filter = document.getElementById("tree-filter");
    if (!filter) return;
    var query = filter.value.trim().toLowerCase();
    state.rows.forEach(function (row) {
      row.hidden = query !== "" && (row.textContent || "").toLowerCase().indexOf(query) < 0;
    });
  }

  /* The tree follows the transcript: the row of the entry at the top of the view is marked. */
  var observer = null;
  function followTranscript() {
    if (!window.IntersectionObserver) return;
    if (observer) observer.disconnect();
    observer = new IntersectionObserver(function (changes) {
      changes.forEach(function (change) {
        if (!change.isIntersecting) return;
        var key = change.target.getAttribute("data-key");
        var row = state.rows.get(key);
        if (!row) return;
        state.rows.forEach(function (other) { other.classList.remove("seen"); });
        row.classList.add("seen");
        var panel = row.closest(".tree-panel");
        if (panel) {
          var top = row.offsetTop - panel.scrollTop;
          if (top < 0 || top > panel.clientHeight - 20) panel.scrollTop = row.offsetTop - panel.clientHeight / 3;
        }
      });
    }, { rootMargin: "-100px 0px -70% 0px" });
    document.querySelectorAll("#transcript .entry").forEach(function (el) { observer.observe(el); });
  }

  /* Folding (issue 13 #3): a row where a branch starts (its parent has several children) gets a
     toggle that hides or shows everything below it. */
  function descendants(key) {
    var out = [];
    var stack = (state.children.get(key) || []).slice();
    var seen = new Set();
    while (stack.length) {
      var next = stack.pop();
      if (seen.has(next)) continue;
      seen.add(next);
      out.push(next);
      (state.children.get(next) || []).forEach(function (child) { stack.push(child); });
    }
    return out;
  }

  function addFolds() {
    state.rows.forEach(function (row, key) {
      var item = state.entries.get(key);
      if (!item || item.parent === null) return;
      var siblings = state.children.get(item.parent) || [];
      if (siblings.length < 2 || !(state.children.get(key) || []).length) return;
      var toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "fold";
      toggle.textContent = "▾";
      toggle.title = "fold this branch";
      toggle.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        var folding = !row.classList.contains("folded");
        var below = descendants(key);
        below.forEach(function (child) {
          var childRow = state.rows.get(child);
          if (childRow) childRow.classList.toggle("fold-hidden", folding);
        });
        row.classList.toggle("folded", folding);
        toggle.textContent = folding ? "▸" : "▾";
        toggle.title = folding ? below.length + " entries folded; unfold" : "fold this branch";
      });
      row.insertBefore(toggle, row.firstChild);
    });
  }

  function wire() {
    addFolds();
    window.ompLocalTimes(document);
    var filter = document.getElementById("tree-filter");
    if (filter) {
      filter.hidden = false;
      filter.addEventListener("input", filterTree);
    }
    followTranscript();
  }

  function start() {
    state = load();
    if (!state) return;
    if (!location.hash) select(state.initial);
    fromHash();
    if (!state.selected) select(state.initial);
    window.addEventListener("hashchange", fromHash);
    wire();
    startLive();
    document.documentElement.classList.add("ready");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
