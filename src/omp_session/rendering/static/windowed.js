/* omp-session viewer (issue 13 #2; every session, issue 23 #2): the transcript a window at a time,
 * a virtual tree.
 *
 * The page holds the last window of the context at the leaf and the tree rows around it. Scrolling
 * the transcript fetches the window before or after; scrolling the tree fetches rows; a click on a
 * row fetches the context at that node; live updates fetch only the entries after the last one
 * shown. Entry HTML comes rendered and sanitised from the server (or, in the export, from the
 * file's blocks); row texts are set with textContent only.
 *
 * As the whole page did before it (issue 13 #2): the entries a compaction replaced open from a
 * collapsed group (fetched when opened), the tree (windowed_tree.js) filters and folds, and j/k/[/]
 * load the next window when the cursor reaches the end of the one shown. On a cold open the page
 * comes before the tree rows: they are asked for once the transcript is on screen.
 */
(function () {
  "use strict";
  var body = document.body;
  var dataElement = document.getElementById("window-data");
  if (!dataElement) return;
  var data = JSON.parse(dataElement.textContent);
  var windowUrl = body.getAttribute("data-window-url");
  var rowsUrl = body.getAttribute("data-rows-url");
  var state = {
    window: data.window, rowCount: data.rowCount, rows: new Map(), pathRows: data.window.pathRows || [],
    busy: false, loading: new Set(),
    view: null,          /* display position -> row index while filtered or folded, else null */
    folded: new Map(),   /* row index -> end of its subtree */
    filter: "",
    keyRow: new Map(),   /* entry key -> its tree row, for the entries shown */
    seen: null           /* the row of the entry at the top of the transcript */
  };
  data.rows.forEach(function (row, i) { state.rows.set(data.rowsStart + i, row); });

  var transcript = document.getElementById("transcript");
  var panel = document.getElementById("tree-panel");
  var tree = window.ompVirtualTree(state, get, rowsUrl);

  function get(url) {
    /* the HTML export answers in the page (export_api.js), the viewer from its server */
    if (window.ompLocalApi) return window.ompLocalApi(url);
    return fetch(url, { cache: "no-store" }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    });
  }

  function fragment(html) {
    var template = document.createElement("template");
    template.innerHTML = html; /* server-rendered, escaped and sanitised (rendering.entry_html) */
    return template.content;
  }

  /* -- the transcript ------------------------------------------------------------------------- */

  function updateBar() {
    var w = state.window;
    document.getElementById("bar-where").textContent =
      (w.at === w.leaf ? "Current branch, at the leaf: " : "Context at: ") + (w.where || "");
    document.getElementById("bar-count").textContent =
      w.sent + " message" + (w.sent === 1 ? "" : "s") + " sent to the model · " + w.pathLength +
      " entries on the path" + (w.dropped ? " · " + w.dropped + " replaced by a compaction" : "");
    document.getElementById("bar-usage").textContent = w.usage || "";
    var back = document.getElementById("bar-leaf");
    back.hidden = w.at === w.leaf;
    back.href = "#at=" + encodeURIComponent(w.leaf || "");
    var before = document.getElementById("window-before");
    before.hidden = w.start <= 0;
    before.textContent = w.start + " earlier entr" + (w.start === 1 ? "y" : "ies") + " — scroll up to load";
    var after = document.getElementById("window-after");
    after.hidden = w.end >= w.total;
    after.textContent = (w.total - w.end) + " later entr" + (w.total - w.end === 1 ? "y" : "ies") + " — scroll down to load";
  }

  function localize() {
    if (window.ompLocalTimes) window.ompLocalTimes(transcript);
  }

  /* The entries the compaction replaced (or /clear cleared): a collapsed, dimmed group above the
     summary; its entries are fetched a window at a time when it is opened. */
  function compactedGroup(reply) {
    var group = document.createElement("details");
    group.className = "compacted";
    var summary = document.createElement("summary");
    summary.textContent = reply.dropped + " earlier entr" + (reply.dropped === 1 ? "y is" : "ies are") +
      (reply.cleared ? " cleared by /clear below" : " replaced by the compaction summary below") +
      " (not sent to the model)";
    group.appendChild(summary);
    var loaded = 0;
    var total = reply.dropped;
    var pending = null; /* the window being fetched: opening the group and a deep link share it */
    var at = reply.at;
    var moreButton = document.createElement("button");
    moreButton.type = "button";
    moreButton.className = "window-more";
    function load() {
      if (pending) return pending;
      moreButton.remove();
      pending = get(windowUrl + "?at=" + encodeURIComponent(at) + "&dropped=1&start=" + loaded).then(function (r) {
        group.appendChild(fragment(r.html));
        loaded = r.end;
        total = r.total;
        localize();
        if (loaded < r.total) {
          moreButton.textContent = (r.total - loaded) + " more — load";
          group.appendChild(moreButton);
        }
      }).finally(function () { pending = null; });
      return pending;
    }
    moreButton.addEventListener("click", function () { load(); });
    group.addEventListener("toggle", function () { if (group.open && !loaded) load(); });
    /* A deep link to an entry the compaction replaced: the group opens and loads windows until the
       entry is in it; the entry, or null. */
    group.ompFind = function (key) {
      var selector = '.entry[data-key="' + CSS.escape(key) + '"]';
      group.open = true;
      return (function look(tries) {
        var el = group.querySelector(selector);
        if (el || loaded >= total || tries <= 0) return Promise.resolve(el);
        return load().then(function () { return look(tries - 1); });
      })(50);
    };
    return group;
  }

  /* The target of a deep link or search hit: marked, the term of the search that led here marked
     (the collapsed blocks holding it opened: issue 13 #4) and scrolled to. */

  /* The tree follows the transcript: the row of the entry at the top of the
     view is marked and kept in view. Windows carry the row of each of their entries (keyRows). */
  function learnRows(keys, rows) {
    (rows || []).forEach(function (row, i) { if (row !== null && row !== undefined) state.keyRow.set(keys[i], row); });
  }

  var follower = window.IntersectionObserver ? new IntersectionObserver(function (changes) {
    changes.forEach(function (change) {
      if (!change.isIntersecting) return;
      var row = state.keyRow.get(change.target.getAttribute("data-key"));
      if (row === undefined || row === state.seen) return;
      state.seen = row;
      tree.showRow(row);
      tree.draw();
    });
  }, { rootMargin: "-100px 0px -70% 0px" }) : null;

  function follow() {
    /* observing anew reports each entry's place again: rows learnt late (a cold open) take effect */
    if (follower) {
      transcript.querySelectorAll(".entry").forEach(function (el) { follower.unobserve(el); follower.observe(el); });
    }
  }

  function withGroup(reply, content) {
    if (reply.start === 0 && reply.dropped) content.insertBefore(compactedGroup(reply), content.firstChild);
    return content;
  }

  function show(reply, target) {
    state.window = reply;
    state.pathRows = reply.pathRows || [];
    transcript.replaceChildren(withGroup(reply, fragment((reply.summary || "") + reply.html)));
    learnRows(reply.keys, reply.keyRows);
    follow();
    localize();
    updateBar();
    tree.showRow(reply.row);
    tree.draw();
    var el = target ? transcript.querySelector('.entry[data-key="' + CSS.escape(target) + '"]') : null;
    var group = transcript.querySelector("details.compacted");
    if (el) {
      window.ompLand(el);
    } else if (target && group && group.ompFind) {
      return group.ompFind(target).then(function (found) {
        if (found) window.ompLand(found); else window.scrollTo(0, document.body.scrollHeight);
      });
    } else {
      window.scrollTo(0, document.body.scrollHeight);
    }
    return Promise.resolve(null);
  }

  function select(key, around) {
    /* a deep link (`around`, no node) keeps the context shown when it holds the entry */
    var shown = !key && around && state.window.at ? "&from=" + encodeURIComponent(state.window.at) : "";
    var url = windowUrl + "?" + (key ? "at=" + encodeURIComponent(key) : "") +
      (around ? "&target=" + encodeURIComponent(around) : "") + shown;
    state.busy = true;
    return get(url).then(function (reply) { return show(reply, around); })
      .finally(function () { state.busy = false; });
  }

  function hasMore(direction) {
    var w = state.window;
    return direction < 0 ? w.start > 0 : w.end < w.total;
  }

  function more(direction) {
    var w = state.window;
    if (state.busy || !hasMore(direction)) return Promise.resolve(false);
    state.busy = true;
    var url = windowUrl + "?at=" + encodeURIComponent(w.at) + (direction < 0 ? "&end=" + w.start : "&start=" + w.end);
    return get(url).then(function (reply) {
      if (direction < 0) {
        var height = document.body.scrollHeight;
        var summary = transcript.querySelector(".entry.active-compaction");
        var content = withGroup(reply, fragment((reply.summary || "") + reply.html));
        if (summary && reply.start === 0) summary.remove();
        transcript.insertBefore(content, transcript.firstChild);
        window.scrollBy(0, document.body.scrollHeight - height);
        state.window.start = reply.start;
      } else {
        transcript.appendChild(fragment(reply.html));
        state.window.end = reply.end;
      }
      learnRows(reply.keys, reply.keyRows);
      follow();
      localize();
      updateBar();
      return true;
    }).finally(function () { state.busy = false; });
  }

  /* j/k/[/] (common.js, in viewer.js) past the last entry shown load the next window first (issue 13 #2). */
  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || !window.ompStep) return;
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable)) return;
    var keys = { j: [".entry", 1], k: [".entry", -1], "]": [".entry.k-user", 1], "[": [".entry.k-user", -1] };
    var found = keys[event.key];
    if (!found) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    (function attempt(tries) {
      if (window.ompStep(found[0], found[1]) || tries <= 0 || !hasMore(found[1])) return;
      more(found[1]).then(function (loaded) { if (loaded) attempt(tries - 1); });
    })(25);
  }

  function onScroll() {
    if (window.scrollY < 400) more(-1);
    else if (window.innerHeight + window.scrollY > document.body.scrollHeight - 400) more(1);
  }

  function fromHash() {
    var raw = location.hash.slice(1);
    var target;
    try { target = decodeURIComponent(raw); } catch (e) { target = ""; }
    if (target.indexOf("at=") === 0) select(target.slice(3));
    else if (target) select(null, target);
  }

  /* -- live updates: only what is new --------------------------------------------------------- */

  function startLive() {
    var versionUrl = body.getAttribute("data-version-url");
    if (!versionUrl) return; /* the export: a file does not grow */
    var version = body.getAttribute("data-version");
    var interval = parseInt(body.getAttribute("data-poll-ms"), 10) || 2000;
    var badge = document.getElementById("live");
    if (badge) badge.classList.add("on");
    function flash() {
      if (!badge) return;
      badge.classList.add("updated");
      setTimeout(function () { badge.classList.remove("updated"); }, 1500);
    }
    setInterval(function () {
      if (state.busy || document.hidden) return;
      get(versionUrl).then(function (reply) {
        if (reply.version === version) return;
        version = reply.version;
        var w = state.window;
        if (w.at !== w.leaf || w.end < w.total) {
          tree.reset();
          return get(windowUrl + "?at=" + encodeURIComponent(w.at) + "&end=" + w.end).then(function (r) {
            state.rowCount = r.rows;
            tree.draw();
          });
        }
        var last = w.keys && w.keys.length ? w.keys[w.keys.length - 1] : "";
        var shown = transcript.querySelectorAll(".entry");
        if (shown.length) last = shown[shown.length - 1].getAttribute("data-key");
        return get(windowUrl + "?after=" + encodeURIComponent(last)).then(function (r) {
          if (!r.continues || r.dropped !== w.dropped || r.cleared !== w.cleared) {
            /* not a continuation (a new branch, a compaction, /clear): the context afresh */
            tree.reset();
            state.keyRow.clear();
            return select(null).then(function () {
              state.rowCount = state.window.rows;
              tree.draw();
              flash();
            });
          }
          var nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
          transcript.appendChild(fragment(r.html));
          localize();
          state.window = Object.assign(r, { start: w.start, keys: w.keys.concat(r.keys) });
          state.rowCount = r.rows;
          state.pathRows = r.pathRows || [];
          tree.reset();
          state.keyRow.clear(); /* the new rows shift the ones after them */
          learnRows(r.keys, r.keyRows);
          follow();
          updateBar();
          tree.draw();
          if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
          flash();
        });
      }).catch(function () { /* the server may be gone; try again on the next tick */ });
    }, interval);
  }

  /* A cold open sends the page before the tree rows exist: ask for the rows around the node shown
     (the answer also carries the bar's usage and where the path runs in the tree). */
  function loadNear() {
    var keys = (state.window.keys || []).map(function (key) { return "&keys=" + encodeURIComponent(key); }).join("");
    get(rowsUrl + "?near=" + encodeURIComponent(state.window.at || "") + keys).then(function (reply) {
      reply.rows.forEach(function (row, i) { state.rows.set(reply.start + i, row); });
      state.rowCount = reply.count;
      if (reply.at === state.window.at) {
        ["where", "usage", "pathRows", "row", "rows"].forEach(function (name) { state.window[name] = reply[name]; });
        learnRows(state.window.keys || [], reply.keyRows);
        follow();
        state.window.pending = false;
        state.pathRows = reply.pathRows || [];
      }
      updateBar();
      tree.showRow(reply.row);
      tree.draw();
      document.documentElement.classList.add("tree-ready");
    }).catch(function () { setTimeout(loadNear, 1000); });
  }

  function start() {
    localize();
    var initial = transcript.firstChild;
    if (state.window.start === 0 && state.window.dropped) {
      transcript.insertBefore(compactedGroup(state.window), initial);
    }
    updateBar();
    tree.showRow(state.window.row);
    tree.draw();
    panel.addEventListener("scroll", tree.draw, { passive: true });
    window.addEventListener("keydown", onKey, true);
    var filter = document.getElementById("tree-filter");
    filter.hidden = false;
    filter.addEventListener("input", tree.onFilter);
    if (data.rowsPending) loadNear(); else document.documentElement.classList.add("tree-ready");
    learnRows(state.window.keys || [], state.window.keyRows);
    follow();
    window.addEventListener("scroll", onScroll, { passive: true });
    window.addEventListener("hashchange", fromHash);
    if (location.hash) fromHash(); else window.scrollTo(0, document.body.scrollHeight);
    startLive();
    document.documentElement.classList.add("ready");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
