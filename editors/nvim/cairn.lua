-- cairn for Neovim moved to a plugin layout: lua/cairn/ (modules),
-- plugin/cairn.lua (commands), doc/cairn.txt (:help cairn).  Install the
-- editors/nvim folder as a plugin (see README.md).  This file is kept so that
-- `dofile(".../editors/nvim/cairn.lua")`, or editors/nvim on package.path,
-- still loads the same module.
local dir = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
package.path = dir .. "/lua/?.lua;" .. dir .. "/lua/?/init.lua;" .. package.path
if type(package.loaded["cairn"]) == "table" and package.loaded["cairn"].setup then
  return package.loaded["cairn"]
end
return dofile(dir .. "/lua/cairn/init.lua")
