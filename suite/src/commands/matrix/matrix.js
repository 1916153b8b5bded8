"use strict";
// Filters the matrix by profile and by a disposition some host has, can
// show only the rows where hosts disagree, and sorts by a clicked column.
// The filter lives in the URL fragment (#profile=core&disposition=fail), as
// in report.html. The script only reads the DOM; no data is written into it.
(function () {
  var table = document.getElementById("matrix-table");
  var form = document.getElementById("filters");
  var shown = document.getElementById("shown");
  if (!table || !form || !shown) { return; }
  var selects = {
    profile: document.getElementById("filter-profile"),
    disposition: document.getElementById("filter-disposition")
  };
  var differ = document.getElementById("filter-differ");
  var keys = Object.keys(selects);
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);

  function matches(row, key, wanted) {
    if (wanted === "") { return true; }
    if (key === "disposition") {
      return (" " + row.getAttribute("data-dispositions") + " ").indexOf(" " + wanted + " ") >= 0;
    }
    return row.getAttribute("data-" + key) === wanted;
  }

  function apply() {
    var count = 0;
    rows.forEach(function (row) {
      var visible = keys.every(function (key) { return matches(row, key, selects[key].value); }) &&
        (!differ.checked || row.getAttribute("data-differ") === "true");
      row.hidden = !visible;
      if (visible) { count += 1; }
    });
    shown.textContent = count + " of " + rows.length + " requirements shown";
  }

  function writeFragment() {
    var parts = [];
    keys.forEach(function (key) {
      if (selects[key].value !== "") { parts.push(key + "=" + encodeURIComponent(selects[key].value)); }
    });
    if (differ.checked) { parts.push("differ=1"); }
    var url = location.pathname + location.search + (parts.length ? "#" + parts.join("&") : "");
    try { history.replaceState(null, "", url); } catch (ignored) { /* some file: URLs refuse */ }
  }

  function readFragment() {
    var fragment = location.hash.replace(/^#/, "");
    if (fragment.indexOf("=") < 0) { return; }
    var params = new URLSearchParams(fragment);
    keys.forEach(function (key) {
      var wanted = params.get(key) || "";
      var known = Array.prototype.some.call(selects[key].options, function (o) { return o.value === wanted; });
      if (known) { selects[key].value = wanted; }
    });
    differ.checked = params.get("differ") === "1";
    apply();
  }

  keys.forEach(function (key) {
    selects[key].addEventListener("change", function () { apply(); writeFragment(); });
  });
  differ.addEventListener("change", function () { apply(); writeFragment(); });
  window.addEventListener("hashchange", readFragment);

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, index) {
    cell.classList.add("sortable");
    cell.addEventListener("click", function () {
      var descending = cell.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
      cell.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var sorted = rows.slice().sort(function (a, b) {
        var x = a.cells[index].getAttribute("data-sort") || a.cells[index].textContent;
        var y = b.cells[index].getAttribute("data-sort") || b.cells[index].textContent;
        var order = x < y ? -1 : (x > y ? 1 : 0);
        return descending ? -order : order;
      });
      sorted.forEach(function (row) { body.appendChild(row); });
    });
  });
  form.hidden = false;
  readFragment();
  apply();
}());
