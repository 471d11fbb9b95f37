// Which target's tree is on screen, for the parts that label what they show with it (a
// finding card says "on ssh:box" when the tree is not this machine's).
export const shown = $state({ target: 'local' });
