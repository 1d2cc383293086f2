-- cairn for Neovim (0.8+): start `cairn serve` for memory and instruction
-- files and expose the cairn commands.  Pending proposals then appear as
-- diagnostics, and `vim.lsp.buf.code_action()` offers accept / reject /
-- show diff on them.
--
--   require("cairn").setup({ mode = "propose", idleMinutes = 10 })
--
-- Commands: :CairnDrain, :CairnStatus, :CairnAccept ID, :CairnReject ID,
-- :CairnUndo ID.  Drain progress arrives as $/progress (Neovim shows it
-- through its LSP progress handler, e.g. in a status line plugin).
local M = {}

M.defaults = {
  cmd = { "cairn", "serve" },
  -- server settings (names as in the cairn LSP contract)
  settings = {
    mode = "propose",
    provider = "extractive",
    idleMinutes = 10,
    sealIdleMinutes = 20,
    memoryRoots = {},
    instructionFiles = { "AGENTS.md", "CLAUDE.md" },
  },
}

local function is_memory_file(path)
  return path:match("/%.agents/memory/.+%.md$") ~= nil
    or path:match("/MEMORY%.md$") ~= nil
    or path:match("/AGENTS%.md$") ~= nil
    or path:match("/CLAUDE%.md$") ~= nil
end

local function root_of(path)
  local found = vim.fs.find({ ".git", ".cairn", ".agents" }, { path = vim.fs.dirname(path), upward = true })[1]
  return found and vim.fs.dirname(found) or vim.fs.dirname(path)
end

local function client_for(bufnr)
  for _, client in ipairs(vim.lsp.get_active_clients({ bufnr = bufnr, name = "cairn" })) do
    return client
  end
  for _, client in ipairs(vim.lsp.get_active_clients({ name = "cairn" })) do
    return client
  end
  vim.notify("cairn: no cairn server is running (open a memory file first)", vim.log.levels.WARN)
end

local function show_diff(result)
  if type(result) ~= "table" or type(result.diff) ~= "string" then
    return
  end
  vim.cmd("new")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(result.diff, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].filetype = "diff"
  vim.bo[buf].modifiable = false
end

-- Run a cairn command with its single argument object.
function M.command(name, argument, bufnr)
  local client = client_for(bufnr or 0)
  if not client then
    return
  end
  argument.workspace = argument.workspace or client.config.root_dir
  client.request("workspace/executeCommand", { command = name, arguments = { argument } }, function(err, result)
    if err then
      vim.notify("cairn: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
    elseif name ~= "cairn.drainBacklog" then
      vim.notify("cairn: " .. name .. " done")
      vim.cmd("checktime") -- reload memory buffers the command rewrote
    end
  end, bufnr or 0)
end

function M.status(bufnr)
  local client = client_for(bufnr or 0)
  if not client then
    return
  end
  client.request("cairn/status", { workspace = client.config.root_dir }, function(err, st)
    if err then
      vim.notify("cairn: " .. err.message, vim.log.levels.ERROR)
      return
    end
    vim.notify(string.format("cairn: pending %d running %d retry %d attention %d exhausted %d digests %d proposals %d",
      st.pending, st.running, st.retryWaiting, st.attention, st.exhausted, st.digests, st.proposals))
  end, bufnr or 0)
end

function M.setup(opts)
  opts = vim.tbl_deep_extend("force", M.defaults, opts or {})
  if not (vim.lsp and vim.lsp.start) then
    vim.notify("cairn: Neovim 0.8 or later is required (vim.lsp.start)", vim.log.levels.ERROR)
    return
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    pattern = "*.md",
    callback = function(args)
      local path = vim.api.nvim_buf_get_name(args.buf)
      if not is_memory_file(path) then
        return
      end
      vim.lsp.start({
        name = "cairn",
        cmd = opts.cmd,
        root_dir = root_of(path),
        init_options = opts.settings,
        -- sent as workspace/didChangeConfiguration: keep the settings under "cairn"
        -- so an empty configuration never replaces the initializationOptions
        settings = { cairn = opts.settings },
        handlers = {
          -- code actions run their commands through this handler
          ["workspace/executeCommand"] = function(err, result, ctx)
            local command = ctx.params and ctx.params.command
            if err then
              vim.notify("cairn: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
            elseif command == "cairn.showProposal" then
              show_diff(result)
            elseif command == "cairn.accept" or command == "cairn.reject" or command == "cairn.undo" then
              vim.cmd("checktime")
            end
          end,
        },
      }, { bufnr = args.buf })
    end,
  })
  local function ids_command(cmd_name, command)
    vim.api.nvim_create_user_command(cmd_name, function(a)
      M.command(command, { ids = { a.args } })
    end, { nargs = 1, desc = "cairn: " .. command })
  end
  ids_command("CairnAccept", "cairn.accept")
  ids_command("CairnReject", "cairn.reject")
  vim.api.nvim_create_user_command("CairnUndo", function(a)
    M.command("cairn.undo", { id = a.args })
  end, { nargs = 1, desc = "cairn: undo an accepted proposal" })
  vim.api.nvim_create_user_command("CairnDrain", function()
    M.command("cairn.drainBacklog", {})
  end, { desc = "cairn: process and review the backlog now" })
  vim.api.nvim_create_user_command("CairnStatus", function()
    M.status()
  end, { desc = "cairn: counts" })
  -- one maintenance opportunity per idle period is Emacs' job here: Neovim has no
  -- idle timer; send cairn/idle from CursorHold if you want one.
end

return M
