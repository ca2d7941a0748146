/* marl leaderboard site: sortable tables and the overview's filters (no dependencies). */
(function () {
  "use strict";

  function sortValue(cell) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    return raw.trim();
  }

  function compare(a, b, numeric) {
    if (a === "" || b === "") {
      return a === b ? 0 : a === "" ? 1 : -1;
    }
    if (numeric) {
      return parseFloat(a.replace(/,/g, "")) - parseFloat(b.replace(/,/g, ""));
    }
    return a.localeCompare(b);
  }

  function sortBy(table, column, th) {
    var numeric = th.getAttribute("data-type") === "num";
    var first = numeric ? "descending" : "ascending";
    var now = th.getAttribute("aria-sort");
    var order = now === first ? (numeric ? "ascending" : "descending") : first;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", order);
    var sign = order === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, index) {
      return { row: row, index: index, value: sortValue(row.cells[column]) };
    });
    rows.sort(function (x, y) {
      var blank = x.value === "" || y.value === "";
      var c = compare(x.value, y.value, numeric);
      return (blank ? c : sign * c) || x.index - y.index;
    });
    rows.forEach(function (r) {
      body.appendChild(r.row);
    });
  }

  function makeSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      if (!th.hasAttribute("data-type")) {
        return;
      }
      th.tabIndex = 0;
      th.title = "sort";
      th.addEventListener("click", function () {
        sortBy(table, column, th);
      });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, column, th);
        }
      });
    });
  }

  function applyFilters(table) {
    var selects = document.querySelectorAll('select[data-filter][data-table="' + table.id + '"]');
    var shown = 0;
    var rows = table.tBodies[0].rows;
    Array.prototype.forEach.call(rows, function (row) {
      var keep = Array.prototype.every.call(selects, function (select) {
        var want = select.value;
        var have = (row.getAttribute("data-" + select.getAttribute("data-filter")) || "").split(" ");
        return want === "all" || have.indexOf(want) >= 0;
      });
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    var count = document.getElementById("shown");
    if (count) {
      count.textContent = shown + " of " + rows.length + " tasks";
    }
  }

  function showColumns(select) {
    var table = document.getElementById(select.getAttribute("data-table"));
    var want = select.value;
    table.querySelectorAll("[data-" + select.getAttribute("data-columns") + "]").forEach(function (cell) {
      var have = cell.getAttribute("data-" + select.getAttribute("data-columns"));
      cell.hidden = want !== "all" && have !== want;
    });
  }

  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll("select[data-columns]").forEach(function (select) {
    select.addEventListener("change", function () {
      showColumns(select);
    });
    showColumns(select);
  });
  document.querySelectorAll("select[data-filter]").forEach(function (select) {
    var table = document.getElementById(select.getAttribute("data-table"));
    select.addEventListener("change", function () {
      applyFilters(table);
    });
    applyFilters(table);
  });
})();
