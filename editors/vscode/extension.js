// The Astral extension: the language and grammar come from package.json; this file starts the
// language server (`astral lsp`, LSP over stdio) for .astral files.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("astral");
  const [command, ...args] = config.get("server.command", ["astral", "lsp"]);
  const debounce = config.get("server.debounce", 0.3);
  const serverOptions = {
    command,
    args: [...args, "--debounce", String(debounce)],
    transport: TransportKind.stdio,
  };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "astral" },
      { scheme: "untitled", language: "astral" },
    ],
  };
  client = new LanguageClient("astral", "Astral language server", serverOptions, clientOptions);
  client.start();
  context.subscriptions.push({ dispose: () => client && client.stop() });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
