// Filters for the matrix: by contract, by concept tag, failures only, differences only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var contract = document.getElementById("f-contract");
  var tag = document.getElementById("f-tag");
  var failing = document.getElementById("f-failing");
  var differs = document.getElementById("f-differs");
  var count = document.getElementById("f-count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#matrix tbody.row"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("#matrix tbody.group"));

  function apply() {
    var shown = 0;
    var visibleContracts = {};
    rows.forEach(function (row) {
      var tags = (row.getAttribute("data-tags") || "").split(" ");
      var ok = (!contract.value || row.getAttribute("data-contract") === contract.value) &&
        (!tag.value || tags.indexOf(tag.value) >= 0) &&
        (!failing.checked || row.getAttribute("data-failing") === "1") &&
        (!differs.checked || row.getAttribute("data-differs") === "1");
      row.hidden = !ok;
      if (ok) {
        shown += 1;
        visibleContracts[row.getAttribute("data-contract")] = true;
      }
    });
    groups.forEach(function (g) { g.hidden = !visibleContracts[g.getAttribute("data-contract")]; });
    count.textContent = "showing " + shown + " of " + data.rows + " rows";
  }

  function open(id) {
    var row = document.getElementById(id);
    if (!row) { return; }
    row.hidden = false;
    var details = row.querySelector("details");
    if (details) { details.open = true; }
  }

  [contract, tag, failing, differs].forEach(function (el) { el.addEventListener("change", apply); });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  rows.forEach(function (row) {
    row.querySelector("a.toggle").addEventListener("click", function (e) {
      e.preventDefault();
      var details = row.querySelector("details");
      details.open = !details.open;
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("a.jump"), function (a) {
    a.addEventListener("click", function () { open(a.getAttribute("href").slice(1)); });
  });
  if (location.hash) { open(location.hash.slice(1)); }
  apply();
})();
