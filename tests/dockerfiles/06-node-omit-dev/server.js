const pad = require("abx-pad");
console.log(pad("ready", 10));
