-- cairn: user commands and the memory-file autocommand.  Nothing else runs
-- at startup: the server starts with the first command, the cockpit or an
-- opened memory file.  require("cairn").setup{...} changes the options.
if vim.g.loaded_cairn == 1 then
  return
end
if vim.fn.has("nvim-0.7") == 0 then
  vim.api.nvim_echo({ { "cairn: needs Neovim 0.7 or later", "WarningMsg" } }, true, {})
  return
end
vim.g.loaded_cairn = 1
require("cairn.commands").define()
