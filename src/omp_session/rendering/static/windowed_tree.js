/* omp-session viewer: the virtual tree panel (issue 13 #2, #3), used by windowed.js.
 *
 * Only the rows in view are in the page; they are fetched in chunks as the panel scrolls. A row
 * where a branch starts can be folded (its subtree is a contiguous run of rows in pre-order, whose
 * end the server sends with the row); the filter asks for the rows matching a text or label among
 * all of them. While folded or filtered, `state.view` maps display positions to row indexes.
 * Row texts are set with textContent only.
 */
(function () {
  "use strict";
  var ROW_HEIGHT = 19;
  var CHUNK = 200;
  var PREFIX_MAX = 24;

  /* The tree over `state` (rows, rowCount, pathRows, window, loading, view, folded, filter),
     fetching with `get(url)` from `rowsUrl`. */
  window.ompVirtualTree = function (state, get, rowsUrl) {
    var tree = document.getElementById("vtree");
    var space = document.getElementById("vtree-space");
    var list = document.getElementById("vtree-rows");
    var panel = document.getElementById("tree-panel");

    /* -- the tree ------------------------------------------------------------------------------- */

    function inPath(index) {
      return state.pathRows.some(function (run) { return index >= run[0] && index <= run[1]; });
    }

    function rowElement(index, row, position) {
      var li = document.createElement("li");
      var flags = row[5];
      li.className = "row k-" + row[2] + (flags & 1 ? " on" : " off") + (flags & 2 ? " leaf" : "") +
        (inPath(index) ? " inpath" : "") + (row[0] === state.window.at ? " sel" : "") + (index === state.seen ? " seen" : "");
      li.setAttribute("data-key", row[0]);
      li.setAttribute("data-row", index);
      li.style.top = (position * ROW_HEIGHT) + "px";
      if (state.folded.has(index)) li.classList.add("folded");
      var a = document.createElement("a");
      a.href = "#at=" + encodeURIComponent(row[0]);
      var prefix = document.createElement("span");
      prefix.className = "pfx";
      /* as omp's /tree, older levels of a deep prefix give way to the text: at most 8 levels shown */
      prefix.textContent = row[1].length > PREFIX_MAX ? "…" + row[1].slice(1 - PREFIX_MAX) : row[1];
      var text = document.createElement("span");
      text.className = "txt";
      text.textContent = row[3];
      a.appendChild(prefix);
      a.appendChild(text);
      if (row[4]) {
        var tag = document.createElement("span");
        tag.className = "tag";
        tag.textContent = row[4];
        a.appendChild(tag);
      }
      if (flags & 2) {
        var mark = document.createElement("span");
        mark.className = "leafmark";
        mark.textContent = "● leaf";
        a.appendChild(mark);
      } else if (flags & 4) {
        var tip = document.createElement("span");
        tip.className = "tipmark";
        tip.textContent = "◦ end";
        a.appendChild(tip);
      }
      li.appendChild(a);
      if (flags & 8 && !state.filter) li.insertBefore(foldButton(index, row), a);
      return li;
    }

    /* -- folding and filtering: which rows are displayed, in which order ------------------------- */

    function foldButton(index, row) {
      var folded = state.folded.has(index);
      var toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "fold";
      toggle.textContent = folded ? "▸" : "▾";
      toggle.title = folded ? (row[6] - index - 1) + " entries folded; unfold" : "fold this branch";
      toggle.addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        if (state.folded.has(index)) state.folded.delete(index); else state.folded.set(index, row[6]);
        computeView();
        drawTree();
      });
      return toggle;
    }

    function computeView() {
      if (state.filter) return; /* the filter's rows are the view */
      if (!state.folded.size) { state.view = null; return; }
      var view = [];
      for (var index = 0; index < state.rowCount; index++) {
        view.push(index);
        var end = state.folded.get(index);
        if (end !== undefined) index = end - 1;
      }
      state.view = view;
    }

    function displayCount() { return state.view ? state.view.length : state.rowCount; }
    function rowAt(position) { return state.view ? state.view[position] : position; }
    function positionOf(index) { return state.view ? state.view.indexOf(index) : index; }

    var filterTimer = null;
    function onFilter() {
      clearTimeout(filterTimer);
      filterTimer = setTimeout(function () {
        var query = document.getElementById("tree-filter").value.trim();
        var count = document.getElementById("tree-filter-count");
        if (!query) {
          state.filter = "";
          count.textContent = "";
          computeView();
          drawTree();
          return;
        }
        get(rowsUrl + "?q=" + encodeURIComponent(query)).then(function (reply) {
          if (document.getElementById("tree-filter").value.trim() !== query) return;
          state.filter = query;
          state.view = reply.rows.map(function (hit) { state.rows.set(hit[0], hit[1]); return hit[0]; });
          count.textContent = reply.total + " match" + (reply.total === 1 ? "" : "es") +
            (reply.total > reply.rows.length ? " (first " + reply.rows.length + " shown)" : "");
          panel.scrollTop = 0;
          drawTree();
        });
      }, 200);
    }

    function loadRows(first) {
      var chunk = Math.floor(first / CHUNK) * CHUNK;
      if (state.loading.has(chunk)) return;
      state.loading.add(chunk);
      get(rowsUrl + "?start=" + chunk + "&count=" + CHUNK).then(function (rows) {
        rows.forEach(function (row, i) { state.rows.set(chunk + i, row); });
        drawTree();
      }).catch(function () { state.loading.delete(chunk); });
    }

    function drawTree() {
      var count = displayCount();
      space.style.height = (count * ROW_HEIGHT) + "px";
      var top = Math.max(panel.scrollTop - tree.offsetTop, 0);
      var first = Math.max(Math.floor(top / ROW_HEIGHT) - 20, 0);
      var last = Math.min(first + Math.ceil(panel.clientHeight / ROW_HEIGHT) + 40, count);
      var items = [];
      for (var position = first; position < last; position++) {
        var index = rowAt(position);
        var row = state.rows.get(index);
        if (!row) { loadRows(index); continue; }
        items.push(rowElement(index, row, position));
      }
      list.replaceChildren.apply(list, items);
    }

    function showRow(index) {
      if (index === null || index === undefined) return;
      var position = positionOf(index);
      if (position < 0) return;
      var top = tree.offsetTop + position * ROW_HEIGHT;
      if (top < panel.scrollTop + 40 || top > panel.scrollTop + panel.clientHeight - 40) {
        panel.scrollTop = top - panel.clientHeight / 3;
      }
    }


    /* New entries shift the rows below them: forget the rows and folds, filter again. */
    function resetRows() {
      state.rows.clear();
      state.loading.clear();
      state.folded.clear();
      if (state.filter) {
        state.filter = "";
        state.view = null;
        onFilter();
      } else {
        state.view = null;
      }
    }

    space.style.height = (state.rowCount * ROW_HEIGHT) + "px"; /* so the panel can scroll to the leaf */
    return { draw: drawTree, showRow: showRow, reset: resetRows, onFilter: onFilter };
  };
})();
