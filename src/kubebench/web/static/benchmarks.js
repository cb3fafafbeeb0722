// The Benchmark resources of the dashboard's namespace (kubectl get benchmarks), above the experiments.
const section = document.getElementById("benchmarks");

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

async function show() {
  const answer = await (await fetch("/api/benchmarks", { headers: { Accept: "application/json" } })).json();
  if (!answer.available || !answer.items.length) return;
  document.getElementById("benchmarks-namespace").textContent = answer.namespace;
  const body = section.querySelector("tbody");
  for (const b of answer.items) {
    const row = document.createElement("tr");
    const name = document.createElement("td");
    if (b.link) {
      const a = document.createElement("a");
      a.href = b.link;
      a.textContent = b.name;
      name.appendChild(a);
    } else {
      name.textContent = b.name;
    }
    row.append(name, cell(b.state), cell(b.progress), cell(b.primary ? `${b.primary} ${b.unit}`.trim() : ""), cell(b.verdict));
    row.dataset.state = b.state;
    body.appendChild(row);
  }
  section.hidden = false;
}

show().catch(() => {});
