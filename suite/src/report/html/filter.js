"use strict";
// Filters the requirement table by profile and disposition. The state lives
// in the URL fragment (#profile=core&disposition=fail), so a filtered view
// can be linked to, and a fragment given on load applies by changing the
// selects exactly as a click would.
(function () {
  var table = document.getElementById("requirement-table");
  var form = document.getElementById("filters");
  var shown = document.getElementById("shown");
  if (!table || !form || !shown) { return; }
  var selects = {
    profile: document.getElementById("filter-profile"),
    disposition: document.getElementById("filter-disposition")
  };
  var keys = Object.keys(selects);
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);

  function apply() {
    var count = 0;
    rows.forEach(function (row) {
      var visible = keys.every(function (key) {
        var wanted = selects[key].value;
        return wanted === "" || row.getAttribute("data-" + key) === wanted;
      });
      row.hidden = !visible;
      if (visible) { count += 1; }
    });
    keys.forEach(function (key) {
      table.setAttribute("data-filter-" + key, selects[key].value);
    });
    shown.textContent = count + " of " + rows.length + " requirements shown";
  }

  function writeFragment() {
    var parts = [];
    keys.forEach(function (key) {
      if (selects[key].value !== "") {
        parts.push(key + "=" + encodeURIComponent(selects[key].value));
      }
    });
    var url = location.pathname + location.search + (parts.length ? "#" + parts.join("&") : "");
    try { history.replaceState(null, "", url); } catch (ignored) { /* some file: URLs refuse */ }
  }

  function readFragment() {
    var fragment = location.hash.replace(/^#/, "");
    if (fragment.indexOf("=") < 0) { return; } // a plain anchor, not a filter
    var params = new URLSearchParams(fragment);
    keys.forEach(function (key) {
      var select = selects[key];
      var wanted = params.get(key) || "";
      var known = Array.prototype.some.call(select.options, function (option) {
        return option.value === wanted;
      });
      if (known && select.value !== wanted) {
        select.value = wanted;
        select.dispatchEvent(new Event("change"));
      }
    });
  }

  keys.forEach(function (key) {
    selects[key].addEventListener("change", function () { apply(); writeFragment(); });
  });
  window.addEventListener("hashchange", readFragment);
  form.hidden = false;
  readFragment();
  apply();

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { return document.execCommand("copy"); } catch (ignored) { return false; }
  }

  Array.prototype.forEach.call(document.querySelectorAll("button.copy"), function (button) {
    var target = document.getElementById(button.getAttribute("data-target"));
    if (!target) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      function done(copied) {
        button.textContent = copied ? "Copied" : "Press Ctrl+C";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(target.textContent).then(
          function () { done(true); },
          function () { done(selectText(target)); }
        );
      } else {
        done(selectText(target));
      }
    });
  });
}());
