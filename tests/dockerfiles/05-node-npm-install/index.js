const banner = require("abx-banner");
console.log(banner("node app"));
