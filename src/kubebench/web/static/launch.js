// The launch page: a YAML spec (errors listed by line and marked in the gutter) or a small form
// (errors beside their field). A launched experiment opens on its own page, which shows its progress.
import { clear, el, send } from "./common.js";

const specText = document.getElementById("spec-text");
const gutter = document.getElementById("spec-gutter");
const specErrors = document.getElementById("spec-errors");
const paramsText = document.getElementById("params-text");
const formErrors = document.getElementById("form-errors");
const jobForm = document.getElementById("job-form");
const paramRows = document.getElementById("param-rows");
let errorLines = new Map(); // line number → messages

// ---- tabs ---------------------------------------------------------------------------------------
function showTab(name) {
  for (const tab of document.querySelectorAll(".tab")) {
    const active = tab.dataset.tab === name;
    tab.classList.toggle("active", active);
    tab.setAttribute("aria-selected", String(active));
  }
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.dataset.panel !== name;
}
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    showTab(tab.dataset.tab);
    history.replaceState(null, "", tab.dataset.tab === "form" ? "#form" : "#yaml");
  });
}
showTab(window.location.hash === "#form" ? "form" : "yaml");

// ---- the YAML editor's gutter ---------------------------------------------------------------------
function renderGutter() {
  const lines = specText.value.split("\n").length;
  const rows = [];
  for (let i = 1; i <= lines; i += 1) {
    const messages = errorLines.get(i);
    rows.push(el("div", { class: messages ? "error-line" : null, title: messages ? messages.join("\n") : null,
      dataset: { line: String(i) } }, String(i)));
  }
  gutter.replaceChildren(...rows);
  gutter.scrollTop = specText.scrollTop;
}
specText.addEventListener("input", () => { errorLines = new Map(); renderGutter(); });
specText.addEventListener("scroll", () => { gutter.scrollTop = specText.scrollTop; });
renderGutter();

function selectLine(line, area = specText) {
  const lines = area.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, text) => n + text.length + 1, 0);
  const end = start + (lines[line - 1] || "").length;
  if (area === paramsText) area.closest("details").open = true;
  area.focus();
  area.setSelectionRange(start, end);
  const lineHeight = 18;
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

// The API names where a problem is: "line 3, column 5" (the spec) or "params line 2" (the parameter file).
const areaOf = (error) => (String(error.loc || "").startsWith("params") ? paramsText : specText);

function showSpecErrors(detail, errors) {
  clear(specErrors);
  errorLines = new Map();
  const list = errors && errors.length ? errors : [{ message: detail }];
  for (const error of list) {
    const item = el("li", { class: "spec-error", dataset: { line: error.line ?? "" } });
    if (error.line) {
      const area = areaOf(error);
      if (area === specText) errorLines.set(error.line, [...(errorLines.get(error.line) || []), error.message]);
      const where = `${error.loc || `line ${error.line}`}${error.field ? ` (${error.field})` : ""}`;
      item.append(el("a", { href: "#", onclick: (event) => { event.preventDefault(); selectLine(error.line, area); } }, where), ": ");
    } else if (error.loc) {
      item.append(el("strong", {}, error.loc), ": ");
    }
    item.append(error.message || detail);
    specErrors.append(item);
  }
  specErrors.hidden = false;
  renderGutter();
  const firstLine = list.find((e) => e.line);
  if (firstLine) selectLine(firstLine.line, areaOf(firstLine));
}

document.getElementById("yaml-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const button = document.getElementById("launch-yaml");
  const params = paramsText.value;
  const payload = { spec: specText.value };
  if (params.trim()) payload.params = params;
  specErrors.hidden = true;
  button.disabled = true;
  try {
    const launched = await send("POST", "/api/experiments", payload);
    window.location.assign(launched.url || `/experiments/${encodeURIComponent(launched.id)}`);
  } catch (error) {
    showSpecErrors(error.message, error.body && error.body.errors);
    button.disabled = false;
  }
});

// ---- the form -----------------------------------------------------------------------------------
function addParamRow(name = "", values = "") {
  const row = el("div", { class: "param-row" },
    el("input", { class: "param-name", placeholder: "name, e.g. batch_size", value: name, "aria-label": "Parameter name" }),
    el("input", { class: "param-values", placeholder: "values, e.g. 16, 32, 64", value: values, "aria-label": "Parameter values" }),
    el("button", { type: "button", class: "secondary small", onclick: () => row.remove(), title: "Remove" }, "✕"));
  paramRows.append(row);
}
document.getElementById("add-param").addEventListener("click", () => addParamRow());
addParamRow();

function scalar(text) {
  const value = text.trim();
  if (/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(value)) return Number(value);
  if (value === "true" || value === "false") return value === "true";
  const quoted = value.match(/^(["'])(.*)\1$/);
  return quoted ? quoted[2] : value;
}

function formPayload() {
  const value = (name) => jobForm.elements[name].value.trim();
  const local = [];
  const form = { name: value("name"), image: value("image") || null, template: value("template") || null,
    repeats: Number(value("repeats") || 1), backend: value("backend"), parameters: {} };
  const command = value("command");
  if (command.startsWith("[")) {
    try {
      form.command = JSON.parse(command);
    } catch (error) {
      local.push({ field: "command", message: `not a JSON list: ${error.message}` });
    }
  } else if (command) {
    form.command = command; // the server splits it as a shell would (shlex)
  }
  for (const row of paramRows.children) {
    const name = row.querySelector(".param-name").value.trim();
    const values = row.querySelector(".param-values").value;
    if (!name && !values.trim()) continue;
    if (!name) { local.push({ field: "parameters", message: "a parameter has values but no name" }); continue; }
    const list = values.split(",").filter((v) => v.trim() !== "").map(scalar);
    form.parameters[name] = list.length === 1 ? list[0] : list;
  }
  if (value("metric")) form.metrics = [{ name: value("metric"), goal: value("goal"), primary: true }];
  if (!form.name) local.push({ field: "name", message: "a name is required" });
  return { form, local };
}

function fieldOf(error) {
  const where = String(error.field || error.loc || "").replace(/^(body\.)?form\./, "");
  return where.split(/[.[\s]/)[0];
}

function markInvalid(field, invalid) {
  field.classList.toggle("invalid", invalid);
  for (const input of field.querySelectorAll("input, textarea, select")) {
    if (invalid) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
  }
}

function clearFormErrors() {
  for (const node of jobForm.querySelectorAll(".field-error")) node.textContent = "";
  for (const node of jobForm.querySelectorAll(".field.invalid")) markInvalid(node, false);
  clear(formErrors);
  formErrors.hidden = true;
}

function showFormErrors(detail, errors) {
  const list = errors && errors.length ? errors : [{ message: detail }];
  for (const error of list) {
    const target = jobForm.querySelector(`.field-error[data-field="${CSS.escape(fieldOf(error))}"]`);
    if (target) {
      const where = error.line ? `line ${error.line}: ` : error.field && error.field !== fieldOf(error) ? `${error.field}: ` : "";
      target.textContent = [target.textContent, `${where}${error.message}`].filter(Boolean).join("; ");
      markInvalid(target.closest(".field"), true);
    } else {
      formErrors.append(el("li", {}, error.loc ? `${error.loc}: ${error.message}` : error.message || detail));
      formErrors.hidden = false;
    }
  }
}

// An error beside a field is about the value that was sent: editing the field takes it away.
jobForm.addEventListener("input", (event) => {
  const field = event.target.closest(".field");
  if (!field || !field.classList.contains("invalid")) return;
  markInvalid(field, false);
  for (const node of field.querySelectorAll(".field-error")) node.textContent = "";
});

jobForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  clearFormErrors();
  const { form, local } = formPayload();
  if (local.length) { showFormErrors("", local); return; }
  const button = document.getElementById("launch-form");
  button.disabled = true;
  try {
    const launched = await send("POST", "/api/experiments", { form });
    window.location.assign(launched.url || `/experiments/${encodeURIComponent(launched.id)}`);
  } catch (error) {
    showFormErrors(error.message, error.body && error.body.errors);
    button.disabled = false;
  }
});

