// Interactive API docs built from /openapi.json: each operation with its parameters and a form to try it.
"use strict";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function resolve(schema, spec) {
  if (schema && schema.$ref) return resolve(spec.components.schemas[schema.$ref.split("/").pop()], spec);
  if (schema && schema.anyOf) return resolve(schema.anyOf.find((s) => s.type !== "null") || schema.anyOf[0], spec);
  return schema || {};
}

function exampleBody(schema, spec) {
  const body = {};
  for (const [name, property] of Object.entries(resolve(schema, spec).properties || {})) {
    const type = resolve(property, spec).type;
    body[name] = property.default !== undefined ? property.default : type === "integer" ? 1 : "";
  }
  return JSON.stringify(body, null, 2);
}

async function tryIt(method, path, form, output) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem("threadkeep-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  const query = new URLSearchParams();
  for (const input of form.querySelectorAll("input[data-param]")) {
    if (input.value !== "") query.set(input.dataset.param, input.value);
  }
  const init = { method, headers };
  const body = form.querySelector("textarea");
  if (body) {
    headers["Content-Type"] = "application/json";
    init.body = body.value;
  }
  output.hidden = false;
  output.textContent = "…";
  try {
    const response = await fetch(query.toString() ? `${path}?${query}` : path, init);
    const text = await response.text();
    let shown = text;
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      shown = text;
    }
    output.textContent = `HTTP ${response.status}\n${shown}`;
  } catch (error) {
    output.textContent = String(error);
  }
}

function operationNode(spec, path, method, operation) {
  const section = el("section", "operation");
  section.dataset.path = path;
  const head = el("h2", "operation-head");
  head.append(el("span", `method method-${method}`, method.toUpperCase()), el("code", null, path));
  section.append(head, el("p", null, operation.summary || ""));
  const form = el("form", "try");
  const parameters = operation.parameters || [];
  if (parameters.length) {
    const table = el("table", "params");
    for (const parameter of parameters) {
      const row = el("tr");
      const schema = resolve(parameter.schema, spec);
      const input = el("input");
      input.dataset.param = parameter.name;
      input.placeholder = schema.default !== undefined ? String(schema.default) : schema.type || "";
      const description = parameter.description || schema.description || "";
      row.append(
        el("td", null, `${parameter.name}${parameter.required ? " *" : ""}`),
        el("td", "muted small", `${schema.type || ""} ${description}`.trim()),
        el("td", null),
      );
      row.lastChild.append(input);
      table.append(row);
    }
    form.append(table);
  }
  const requestBody = operation.requestBody && operation.requestBody.content["application/json"];
  if (requestBody) {
    const area = el("textarea");
    area.rows = 5;
    area.value = exampleBody(requestBody.schema, spec);
    form.append(area);
  }
  const button = el("button", null, "Try it");
  button.type = "submit";
  const output = el("pre", "response");
  output.hidden = true;
  form.append(button);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    tryIt(method.toUpperCase(), path, form, output);
  });
  section.append(form, output);
  return section;
}

async function start() {
  const target = document.getElementById("operations");
  try {
    const spec = await (await fetch("/openapi.json")).json();
    document.title = `${spec.info.title} API ${spec.info.version}`;
    const nodes = [];
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const [method, operation] of Object.entries(methods)) nodes.push(operationNode(spec, path, method, operation));
    }
    target.replaceChildren(...nodes);
  } catch (error) {
    target.replaceChildren(el("p", "error", `Cannot load /openapi.json: ${error}`));
  }
}

document.addEventListener("DOMContentLoaded", start);
